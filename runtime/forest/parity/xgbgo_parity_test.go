//go:build cgo

package parity_test

import (
	"fmt"
	"math"
	"testing"

	xgbgo "github.com/Elvenson/xgboost-go"
	xgbgoact "github.com/Elvenson/xgboost-go/activation"
	xgbgomat "github.com/Elvenson/xgboost-go/mat"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
)

// TestXGBoostGoParity measures github.com/Elvenson/xgboost-go v0.1.4, the alternative
// to this package, against libxgboost on the cases it claims to handle, and documents
// where it goes wrong. Each case states whether xgboost-go is expected to agree; the
// test fails if that changes either way, so the comparison in the design notes stays
// true. forest is checked on the same rows.
func TestXGBoostGoParity(t *testing.T) {
	p := func(kv ...string) map[string]string {
		m := map[string]string{"nthread": "1", "seed": "3", "tree_method": "hist", "max_depth": "4"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		c        zooCase
		classes  int // xgboost-go's numClasses
		act      string
		nanInMap bool // pass missing cells as NaN entries instead of leaving them out
		agrees   bool
		why      string
	}{
		{zooCase{name: "binary", params: p("objective", "binary:logistic", "base_score", "0.5"), rounds: 20, feats: 8, label: labelBinary, nanFrac: 0.2},
			1, "logistic", false, true, "base_score 0.5 (given: XGBoost >= 2.0 estimates one otherwise) is margin 0, missing cells left out of the map"},
		{zooCase{name: "binary_estimated_base_score", params: p("objective", "binary:logistic"), rounds: 20, feats: 8, label: labelBinary, nanFrac: 0.2},
			1, "logistic", false, false, "the base_score XGBoost >= 2.0 estimates from the labels is ignored"},
		{zooCase{name: "binary_nan_in_map", params: p("objective", "binary:logistic"), rounds: 20, feats: 8, label: labelBinary, nanFrac: 0.2},
			1, "logistic", true, false, "NaN compares false and always goes to the 'yes' branch, ignoring the learned default direction"},
		{zooCase{name: "binary_base_score", params: p("objective", "binary:logistic", "base_score", "0.3"), rounds: 20, feats: 8, label: labelBinary, nanFrac: 0.2},
			1, "logistic", false, false, "base_score is ignored (XGBoost >= 2.0 estimates one by default)"},
		{zooCase{name: "multi_softprob", params: p("objective", "multi:softprob", "num_class", "3"), rounds: 10, feats: 8, label: labelClass, classes: 3, nanFrac: 0.2},
			3, "softmax", false, true, "trees grouped round-robin by class, as XGBoost stores them"},
		{zooCase{name: "multi_parallel_tree", params: p("objective", "multi:softprob", "num_class", "3", "num_parallel_tree", "2", "subsample", "0.8"), rounds: 5, feats: 8, label: labelClass, classes: 3, nanFrac: 0.2},
			3, "softmax", false, false, "with num_parallel_tree > 1 trees are assigned to the wrong classes (tree_info is not read)"},
		{zooCase{name: "regression", params: p("objective", "reg:squarederror", "base_score", "0.5"), rounds: 20, feats: 8, label: labelReal, nanFrac: 0.2},
			1, "raw", false, true, "base_score passed by hand to PredictRegression"},
		{zooCase{name: "poisson", params: p("objective", "count:poisson"), rounds: 20, feats: 8, label: labelCount, nanFrac: 0.2},
			1, "raw", false, false, "no exp transform for count:poisson/reg:gamma/reg:tweedie"},
		{zooCase{name: "pruned_exact", params: p("objective", "binary:logistic", "tree_method", "exact", "max_depth", "8", "gamma", "2", "min_child_weight", "0.1"), rounds: 10, feats: 10, label: labelBinary, nanFrac: 0.3},
			1, "logistic", false, false, "pruned trees have gaps in their node ids, which it cannot index"},
	}
	for i, tc := range cases {
		t.Run(tc.c.name, func(t *testing.T) {
			tr := train(t, tc.c, int64(500+i))
			defer tr.booster.Free()
			const n = 2000
			rows := tr.test[:n*tr.feats]
			dm, err := xgb.NewDMatrixDense(rows, n, tr.feats, float32(math.NaN()))
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Free()
			want, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: xgb.PredictValue})
			if err != nil {
				t.Fatal(err)
			}
			m, err := forest.Parse(tr.json)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := m.Predict(nil, rows, n, forest.OutputDefault)
			compare(t, "forest", got, want)

			bad, total, err := xgboostGo(tr, rows, n, tc.classes, tc.act, tc.nanInMap, want)
			switch {
			case err != nil:
				t.Logf("xgboost-go fails: %v (%s)", err, tc.why)
				if tc.agrees {
					t.Errorf("xgboost-go was expected to agree: %v", err)
				}
			case bad == 0:
				t.Logf("xgboost-go agrees on %d values (%s)", total, tc.why)
				if !tc.agrees {
					t.Errorf("xgboost-go was expected to be wrong (%s) but agrees", tc.why)
				}
			default:
				t.Logf("xgboost-go wrong on %d of %d values (%s)", bad, total, tc.why)
				if tc.agrees {
					t.Errorf("xgboost-go was expected to agree")
				}
			}
		})
	}
}

// xgboostGo loads the booster's dump_model JSON into xgboost-go and counts the values
// that differ from want by more than the parity tolerance. A panic inside xgboost-go
// is reported as an error.
func xgboostGo(tr *trained, rows []float32, n, classes int, act string, nanInMap bool, want []float32) (bad, total int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	dump, err := tr.booster.DumpJSON(false)
	if err != nil {
		return 0, 0, err
	}
	var a xgbgoact.Activation
	switch act {
	case "logistic":
		a = &xgbgoact.Logistic{}
	case "softmax":
		a = &xgbgoact.Softmax{}
	default:
		a = &xgbgoact.Raw{}
	}
	ens, err := xgbgo.LoadXGBoostFromJSONBytes(dump, "", classes, 0, a)
	if err != nil {
		return 0, 0, err
	}
	input := toSparse(rows, n, tr.feats)
	if nanInMap {
		for i := range input.Vectors {
			for j := 0; j < tr.feats; j++ {
				if _, ok := input.Vectors[i][j]; !ok {
					input.Vectors[i][j] = float32(math.NaN())
				}
			}
		}
	}
	var res xgbgomat.Matrix
	if act == "raw" {
		// The user passes base_score by hand: the 0.5 the case trains with.
		res, err = ens.PredictRegression(input, 0.5)
	} else {
		res, err = ens.PredictProba(input)
	}
	if err != nil {
		return 0, 0, err
	}
	for i, v := range res.Vectors {
		for j, x := range *v {
			total++
			if k := i*len(*v) + j; k >= len(want) || !closeTo(x, want[k]) {
				bad++
			}
		}
	}
	return bad, total, nil
}
