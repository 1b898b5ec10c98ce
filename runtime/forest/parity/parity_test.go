//go:build cgo

package parity_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// zooCase is one model of the parity zoo: trained here with libxgboost, then evaluated
// by both libxgboost and forest on rows it has not seen, many of them with missing
// values.
type zooCase struct {
	name    string
	params  map[string]string
	rounds  int
	feats   int
	label   labelKind
	classes int     // multi:* only
	nanFrac float64 // share of missing cells in training and test rows
	groups  bool    // ranking: query groups of 20 rows
}

type labelKind int

const (
	labelBinary labelKind = iota
	labelReal
	labelPositive // > 0 (gamma, squaredlogerror)
	labelCount    // counts >= 0 (poisson, tweedie)
	labelUnit     // [0, 1] (reg:logistic)
	labelClass
	labelRelevance // 0..3 (ranking)
	labelCox       // survival times, negative = censored
)

// vectorLeaf reports whether c grows multi-target trees (one leaf vector for every output).
func vectorLeaf(c zooCase) bool { return c.params["multi_strategy"] == "multi_output_tree" }

func zoo() []zooCase {
	p := func(kv ...string) map[string]string {
		m := map[string]string{"nthread": "1", "seed": "7"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return []zooCase{
		{name: "binary_logistic_hist", params: p("objective", "binary:logistic", "tree_method", "hist", "max_depth", "6"), rounds: 20, feats: 12, label: labelBinary, nanFrac: 0.2},
		{name: "binary_logistic_base_score", params: p("objective", "binary:logistic", "tree_method", "approx", "max_depth", "4", "base_score", "0.3"), rounds: 10, feats: 8, label: labelBinary, nanFrac: 0.1},
		{name: "binary_logistic_exact_pruned", params: p("objective", "binary:logistic", "tree_method", "exact", "max_depth", "8", "gamma", "2", "min_child_weight", "0.1"), rounds: 10, feats: 10, label: labelBinary, nanFrac: 0.3},
		{name: "binary_logitraw", params: p("objective", "binary:logitraw", "tree_method", "hist", "max_depth", "3", "base_score", "0.7"), rounds: 10, feats: 6, label: labelBinary, nanFrac: 0.2},
		{name: "binary_hinge", params: p("objective", "binary:hinge", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 6, label: labelBinary, nanFrac: 0.2},
		{name: "reg_squarederror_exact", params: p("objective", "reg:squarederror", "tree_method", "exact", "max_depth", "5", "base_score", "1.5"), rounds: 15, feats: 10, label: labelReal, nanFrac: 0.2},
		{name: "reg_squarederror_nan_heavy", params: p("objective", "reg:squarederror", "tree_method", "hist", "max_depth", "6"), rounds: 15, feats: 10, label: labelReal, nanFrac: 0.6},
		{name: "reg_squarederror_lossguide_deep", params: p("objective", "reg:squarederror", "tree_method", "hist", "grow_policy", "lossguide", "max_depth", "0", "max_leaves", "64", "min_child_weight", "0"), rounds: 8, feats: 10, label: labelReal, nanFrac: 0.1},
		{name: "reg_squarederror_stump", params: p("objective", "reg:squarederror", "tree_method", "exact", "max_depth", "1"), rounds: 5, feats: 3, label: labelReal, nanFrac: 0.2},
		{name: "reg_squaredlogerror", params: p("objective", "reg:squaredlogerror", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 6, label: labelPositive, nanFrac: 0.2},
		{name: "reg_logistic", params: p("objective", "reg:logistic", "tree_method", "approx", "max_depth", "4", "base_score", "0.4"), rounds: 10, feats: 6, label: labelUnit, nanFrac: 0.2},
		{name: "reg_pseudohubererror", params: p("objective", "reg:pseudohubererror", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 6, label: labelReal, nanFrac: 0.2},
		{name: "reg_absoluteerror", params: p("objective", "reg:absoluteerror", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 6, label: labelReal, nanFrac: 0.2},
		{name: "count_poisson", params: p("objective", "count:poisson", "tree_method", "hist", "max_depth", "4", "base_score", "2"), rounds: 10, feats: 6, label: labelCount, nanFrac: 0.2},
		{name: "reg_gamma", params: p("objective", "reg:gamma", "tree_method", "exact", "max_depth", "4", "base_score", "3"), rounds: 10, feats: 6, label: labelPositive, nanFrac: 0.2},
		{name: "reg_tweedie", params: p("objective", "reg:tweedie", "tree_method", "approx", "max_depth", "4", "tweedie_variance_power", "1.3"), rounds: 10, feats: 6, label: labelCount, nanFrac: 0.2},
		{name: "survival_cox", params: p("objective", "survival:cox", "tree_method", "hist", "max_depth", "3"), rounds: 10, feats: 6, label: labelCox, nanFrac: 0.1},
		{name: "multi_softmax", params: p("objective", "multi:softmax", "num_class", "4", "tree_method", "hist", "max_depth", "4"), rounds: 8, feats: 8, label: labelClass, classes: 4, nanFrac: 0.2},
		{name: "multi_softprob_exact", params: p("objective", "multi:softprob", "num_class", "3", "tree_method", "exact", "max_depth", "5"), rounds: 8, feats: 8, label: labelClass, classes: 3, nanFrac: 0.3},
		{name: "multi_softprob_parallel_forest", params: p("objective", "multi:softprob", "num_class", "3", "tree_method", "hist", "max_depth", "3", "num_parallel_tree", "3", "subsample", "0.7", "colsample_bynode", "0.7"), rounds: 4, feats: 8, label: labelClass, classes: 3, nanFrac: 0.2},
		{name: "random_forest", params: p("objective", "reg:squarederror", "tree_method", "hist", "max_depth", "6", "num_parallel_tree", "5", "subsample", "0.6", "colsample_bynode", "0.6", "learning_rate", "1"), rounds: 1, feats: 10, label: labelReal, nanFrac: 0.2},
		{name: "binary_parallel_tree", params: p("objective", "binary:logistic", "tree_method", "approx", "max_depth", "4", "num_parallel_tree", "2", "subsample", "0.8"), rounds: 5, feats: 8, label: labelBinary, nanFrac: 0.2},
		// XGBoost 2.0+ models the trainer writes on libxgboost 3.0: vector-leaf trees and two quantiles.
		{name: "multi_softprob_multi_output_tree", params: p("objective", "multi:softprob", "num_class", "3", "tree_method", "hist", "max_depth", "4", "multi_strategy", "multi_output_tree"), rounds: 8, feats: 8, label: labelClass, classes: 3, nanFrac: 0.2},
		{name: "reg_quantile_two_alphas", params: p("objective", "reg:quantileerror", "quantile_alpha", "[0.1,0.9]", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 6, label: labelReal, nanFrac: 0.2},
		{name: "rank_pairwise", params: p("objective", "rank:pairwise", "tree_method", "hist", "max_depth", "4"), rounds: 10, feats: 8, label: labelRelevance, nanFrac: 0.2, groups: true},
		{name: "rank_ndcg", params: p("objective", "rank:ndcg", "tree_method", "exact", "max_depth", "4"), rounds: 10, feats: 8, label: labelRelevance, nanFrac: 0.2, groups: true},
		{name: "rank_map", params: p("objective", "rank:map", "tree_method", "approx", "max_depth", "4"), rounds: 10, feats: 8, label: labelBinary, nanFrac: 0.2, groups: true},
		{name: "dart_binary", params: p("booster", "dart", "objective", "binary:logistic", "tree_method", "hist", "max_depth", "4", "rate_drop", "0.3", "skip_drop", "0"), rounds: 12, feats: 8, label: labelBinary, nanFrac: 0.2},
		{name: "dart_multi_forest", params: p("booster", "dart", "objective", "multi:softprob", "num_class", "3", "tree_method", "hist", "max_depth", "3", "rate_drop", "0.5", "one_drop", "1", "normalize_type", "forest", "num_parallel_tree", "2", "subsample", "0.8"), rounds: 6, feats: 8, label: labelClass, classes: 3, nanFrac: 0.2},
		{name: "dart_regression_weighted", params: p("booster", "dart", "objective", "reg:squarederror", "tree_method", "exact", "max_depth", "5", "rate_drop", "0.2", "sample_type", "weighted"), rounds: 12, feats: 6, label: labelReal, nanFrac: 0.2},
		{name: "gblinear_regression", params: p("booster", "gblinear", "objective", "reg:squarederror", "updater", "shotgun", "base_score", "0.8"), rounds: 10, feats: 10, label: labelReal, nanFrac: 0.2},
		{name: "gblinear_logistic", params: p("booster", "gblinear", "objective", "binary:logistic", "updater", "coord_descent"), rounds: 10, feats: 10, label: labelBinary, nanFrac: 0.2},
		{name: "gblinear_multi", params: p("booster", "gblinear", "objective", "multi:softprob", "num_class", "3"), rounds: 10, feats: 6, label: labelClass, classes: 3, nanFrac: 0.2},
		{name: "gblinear_poisson", params: p("booster", "gblinear", "objective", "count:poisson"), rounds: 10, feats: 6, label: labelCount, nanFrac: 0.2},
	}
}

func genLabels(r *rand.Rand, x []float32, n, f int, c zooCase) []float32 {
	y := make([]float32, n)
	for i := 0; i < n; i++ {
		row := x[i*f : (i+1)*f]
		get := func(j int) float64 {
			if v := row[j%f]; v == v {
				return float64(v)
			}
			return 0
		}
		s := get(0) - 0.7*get(2) + 0.5*get(3)*get(4) + 0.3*r.NormFloat64()
		switch c.label {
		case labelBinary:
			y[i] = b2f(s > 0)
		case labelReal:
			y[i] = float32(3*s + 1)
		case labelPositive:
			y[i] = float32(math.Exp(0.5*s) + 0.01)
		case labelCount:
			y[i] = float32(math.Floor(math.Exp(0.7 * s)))
		case labelUnit:
			y[i] = float32(1 / (1 + math.Exp(-2*s)))
		case labelClass:
			k := int(math.Floor((s + 1.5) / 3 * float64(c.classes)))
			y[i] = float32(min(max(k, 0), c.classes-1))
		case labelRelevance:
			y[i] = float32(min(max(int(s+1.5), 0), 3))
		case labelCox:
			t := math.Exp(-s) + 0.1
			if r.Float64() < 0.3 {
				t = -t
			}
			y[i] = float32(t)
		}
	}
	return y
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

const (
	trainRows = 800
	testRows  = 3000
)

type trained struct {
	booster *xgb.Booster
	json    []byte
	ubj     []byte
	test    []float32
	feats   int
}

func train(t testing.TB, c zooCase, seed int64) *trained {
	t.Helper()
	// libxgboost 1.7 keeps training state per OS thread: when the goroutine moves to
	// another thread between creating the DMatrix and boosting, about one round in a
	// hundred fails with "0 feature is supplied".
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(seed))
	x := foresttest.GenRows(r, trainRows, c.feats, c.nanFrac)
	y := genLabels(r, x, trainRows, c.feats, c)
	d, err := xgb.NewDMatrixDense(x, trainRows, c.feats, float32(math.NaN()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	if err := d.SetFloatInfo("label", y); err != nil {
		t.Fatal(err)
	}
	if c.groups {
		g := make([]uint32, trainRows/20)
		for i := range g {
			g[i] = 20
		}
		if err := d.SetGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	b, err := xgb.NewBooster(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetParams(c.params); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.rounds; i++ {
		if err := b.UpdateOneIter(i, d); err != nil {
			t.Fatal(err)
		}
	}
	js, err := b.ModelBytes("json")
	if err != nil {
		t.Fatal(err)
	}
	ub, err := b.ModelBytes("ubj")
	if err != nil {
		t.Fatal(err)
	}
	test := foresttest.GenRows(r, testRows, c.feats, c.nanFrac)
	return &trained{booster: b, json: js, ubj: ub, test: test, feats: c.feats}
}

// closeTo compares float32 results: equal, or within 1e-6 absolute for values up to 1
// and 1e-6 relative above (float32 carries about 7 significant digits).
func closeTo(got, want float32) bool {
	if got == want || (got != got && want != want) {
		return true
	}
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-6*math.Max(1, math.Abs(float64(want)))
}

type diffStats struct {
	n, exact int
	maxAbs   float64
}

func compare(t *testing.T, what string, got, want []float32) diffStats {
	t.Helper()
	var st diffStats
	if len(got) != len(want) {
		t.Errorf("%s: forest returned %d values, libxgboost %d", what, len(got), len(want))
		return st
	}
	bad := 0
	for i := range want {
		st.n++
		if got[i] == want[i] {
			st.exact++
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > st.maxAbs && !math.IsNaN(d) {
			st.maxAbs = d
		}
		if !closeTo(got[i], want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d]: forest %v, libxgboost %v", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(want))
	}
	return st
}

func TestParityZoo(t *testing.T) {
	for i, c := range zoo() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := train(t, c, int64(100+i))
			defer tr.booster.Free()
			dm, err := xgb.NewDMatrixDense(tr.test, testRows, tr.feats, float32(math.NaN()))
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Free()
			linear := c.params["booster"] == "gblinear"
			for _, format := range []string{"json", "ubj"} {
				data := tr.json
				if format == "ubj" {
					data = tr.ubj
				}
				m, err := forest.Parse(data)
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				if m.NumFeatures() != tr.feats {
					t.Errorf("%s: NumFeatures %d, want %d", format, m.NumFeatures(), tr.feats)
				}
				kinds := []struct {
					kind forest.OutputKind
					typ  xgb.PredictType
				}{
					{forest.OutputDefault, xgb.PredictValue},
					{forest.OutputMargin, xgb.PredictMargin},
					{forest.OutputContribs, xgb.PredictContribs},
				}
				if !linear {
					kinds = append(kinds, struct {
						kind forest.OutputKind
						typ  xgb.PredictType
					}{forest.OutputLeaf, xgb.PredictLeaf})
				}
				if vectorLeaf(c) {
					// libxgboost 3.0 has no contributions for vector-leaf trees ("Predict
					// contribution support for multi-target tree is not yet implemented"): there
					// is nothing to compare with.
					kinds = slices.DeleteFunc(kinds, func(k struct {
						kind forest.OutputKind
						typ  xgb.PredictType
					}) bool {
						return k.kind == forest.OutputContribs
					})
				}
				var summary []string
				for _, k := range kinds {
					want, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: k.typ})
					if err != nil {
						t.Fatal(err)
					}
					got, err := m.Predict(nil, tr.test, testRows, k.kind)
					if err != nil {
						t.Fatalf("%s %s: %v", format, k.kind, err)
					}
					st := compare(t, fmt.Sprintf("%s %s", format, k.kind), got, want)
					summary = append(summary, fmt.Sprintf("%s %d/%d exact max|d|=%.2g", k.kind, st.exact, st.n, st.maxAbs))
				}
				if format == "json" {
					def, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: xgb.PredictValue})
					if err != nil {
						t.Fatal(err)
					}
					margin, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: xgb.PredictMargin})
					if err != nil {
						t.Fatal(err)
					}
					checkDerived(t, m, tr.test, testRows, def, margin)
				}
				// In-place prediction (what a dense request would use) must agree too.
				want, _, err := tr.booster.PredictDense(tr.test, testRows, tr.feats, float32(math.NaN()), xgb.PredictOptions{Type: xgb.PredictValue})
				if err == nil {
					got, _ := m.Predict(nil, tr.test, testRows, forest.OutputDefault)
					compare(t, format+" default vs in-place", got, want)
				}
				// Single rows and short batches take other kernels than long batches;
				// results are bit-identical: every kernel adds the same values in the
				// same order.
				batch, _ := m.Predict(nil, tr.test[:200*tr.feats], 200, forest.OutputMargin)
				for r := 0; r < 200; r++ {
					row := tr.test[r*tr.feats : (r+1)*tr.feats]
					one, err := m.Predict(nil, row, 1, forest.OutputMargin)
					if err != nil {
						t.Fatal(err)
					}
					three, err := m.Predict(nil, tr.test[r*tr.feats:(r+3)*tr.feats], 3, forest.OutputMargin)
					if err != nil {
						t.Fatal(err)
					}
					ng := m.NumGroups()
					for g := 0; g < ng; g++ {
						if one[g] != batch[r*ng+g] || three[g] != batch[r*ng+g] {
							t.Fatalf("%s row %d group %d: single-row margin %v, 3-row %v, batch %v", format, r, g, one[g], three[g], batch[r*ng+g])
						}
					}
					if r > 20 {
						break
					}
				}
				if format == "json" {
					t.Logf("%s: %s", c.name, strings.Join(summary, "; "))
				}
			}
		})
	}
}

// TestParityZooCoversPrunedTrees makes sure the zoo really contains trees with deleted
// nodes, the case where node ids are not dense.
func TestParityZooCoversPrunedTrees(t *testing.T) {
	for i, c := range zoo() {
		if c.name != "binary_logistic_exact_pruned" {
			continue
		}
		tr := train(t, c, int64(100+i))
		defer tr.booster.Free()
		if !bytes.Contains(tr.json, []byte(`"num_deleted":"`)) || bytes.Contains(tr.json, []byte(`"num_deleted":"0"`)) && !hasDeleted(tr.json) {
			t.Fatalf("%s: no tree with deleted nodes; raise gamma", c.name)
		}
	}
}

func hasDeleted(js []byte) bool {
	for _, part := range bytes.Split(js, []byte(`"num_deleted":"`))[1:] {
		if part[0] != '0' {
			return true
		}
	}
	return false
}

// checkDerived checks the outputs libxgboost has no direct counterpart for, against
// what they are defined from: OutputProba ([1-p, p] for binary, softmax over classes)
// and OutputLabel (p > 0.5, margin > 0, argmax), as scikit-learn's XGBClassifier
// derives them from Booster.predict.
func checkDerived(t *testing.T, m *forest.Model, rows []float32, n int, def, margin []float32) {
	t.Helper()
	ng := m.NumGroups()
	proba, perr := m.Predict(nil, rows, n, forest.OutputProba)
	label, err := m.Predict(nil, rows, n, forest.OutputLabel)
	if err != nil {
		t.Fatalf("label: %v", err)
	}
	obj := m.Objective()
	switch {
	case strings.HasPrefix(obj, "binary:"):
		if perr != nil {
			t.Fatalf("proba: %v", perr)
		}
		for i := 0; i < n; i++ {
			p := float32(1 / (1 + math.Exp(-float64(margin[i]))))
			wantLabel := b2f(margin[i] > 0)
			switch obj {
			case "binary:logistic":
				p = def[i]
				wantLabel = b2f(def[i] > 0.5)
			case "binary:hinge":
				p = def[i]
			}
			if !closeTo(proba[2*i+1], p) || !closeTo(proba[2*i], 1-p) {
				t.Fatalf("row %d: proba %v, want [%v %v]", i, proba[2*i:2*i+2], 1-p, p)
			}
			if label[i] != wantLabel {
				t.Fatalf("row %d: label %v, want %v", i, label[i], wantLabel)
			}
		}
	case strings.HasPrefix(obj, "multi:"):
		if perr != nil {
			t.Fatalf("proba: %v", perr)
		}
		for i := 0; i < n; i++ {
			pr := proba[i*ng : (i+1)*ng]
			best := 0
			for k := range pr {
				if pr[k] > pr[best] {
					best = k
				}
			}
			if obj == "multi:softprob" {
				compare(t, "proba", pr, def[i*ng:(i+1)*ng])
			} else if float32(best) != def[i] {
				t.Fatalf("row %d: argmax of proba %d, libxgboost class %v", i, best, def[i])
			}
			if label[i] != float32(best) {
				t.Fatalf("row %d: label %v, want %d", i, label[i], best)
			}
		}
	default:
		if perr == nil {
			t.Fatalf("proba for %s: no error", obj)
		}
		compare(t, "label", label, def)
	}
}
