package forest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// edit applies "old=>new" replacements, separated by "|", to foresttest.TinyModel.
func edit(t *testing.T, edits string) string {
	t.Helper()
	doc := foresttest.TinyModel
	for _, rep := range strings.Split(edits, "|") {
		oldNew := strings.SplitN(rep, "=>", 2)
		if !strings.Contains(doc, oldNew[0]) {
			t.Fatalf("test bug: %q not in the model", oldNew[0])
		}
		doc = strings.Replace(doc, oldNew[0], oldNew[1], 1)
	}
	return doc
}

const (
	noNames  = `"feature_names":["f0","f1"],"feature_types":["float","float"],=>`
	features = `"num_feature":"2","num_target"=>"num_feature":"%d","num_target"`
)

// TestDeclaredSizeBounds: a model declaring sizes beyond what anyone trains is refused
// at load, naming the field, the value and the limit, before any of it is allocated.
func TestDeclaredSizeBounds(t *testing.T) {
	tests := []struct {
		name, edits, want string
	}{
		{"num_class", `"num_class":"0"=>"num_class":"65537"`, "learner.learner_model_param.num_class: expected 0..65536, got 65537"},
		{"num_class 2^20", `"num_class":"0"=>"num_class":"1048576"`, "num_class: expected 0..65536, got 1048576"},
		{"num_target", `"num_target":"1"=>"num_target":"65537"`, "learner.learner_model_param.num_target: expected 0..65536, got 65537"},
		{"negative num_class", `"num_class":"0"=>"num_class":"-1"`, "num_class: expected 0..65536, got -1"},
		{"num_feature", noNames + "|" + fmt.Sprintf(features, 1<<24+1), "learner.learner_model_param.num_feature: expected 1..16777216, got 16777217"},
		{"num_trees", `"num_trees":"2"=>"num_trees":"1048577"`, "gbtree_model_param.num_trees: expected 0..1048576, got 1048577"},
		{"num_nodes", `"num_nodes":"3"=>"num_nodes":"16777217"`, "trees[0]: tree_param.num_nodes: expected 1..16777216, got 16777217"},
		{"base_score length", `"base_score":"5E-1"=>"base_score":"[1,2,3]"`, "learner.learner_model_param.base_score: expected 1 value or one per output group (1), got 3 values"},
		{"base_score per class", `"num_class":"0"=>"num_class":"3"|"base_score":"5E-1"=>"base_score":"[1,2]"`, "base_score: expected 1 value or one per output group (3), got 2 values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := forest.Parse([]byte(edit(t, tc.edits)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if m != nil {
				t.Fatal("a model and an error")
			}
		})
	}
	// At the bounds, models load.
	for _, edits := range []string{
		`"num_class":"0"=>"num_class":"65536"`,
		noNames + "|" + fmt.Sprintf(features, 1<<24),
		`"num_class":"0"=>"num_class":"2"|"base_score":"5E-1"=>"base_score":"[1,2]"`,
	} {
		if _, err := forest.Parse([]byte(edit(t, edits))); err != nil {
			t.Errorf("%s: %v", edits, err)
		}
	}
}

// chainModel is a regression model of one tree that splits on feature 0 at every level,
// depth levels deep (a lossguide tree can look like this).
func chainModel(depth int) string {
	n := 2*depth + 1
	ints := func(f func(i int) int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, f(i))
		}
		return b.String()
	}
	// Node 2k is internal (k < depth) with children 2k+1 (a leaf) and 2k+2.
	left := ints(func(i int) int {
		if i%2 == 0 && i < n-1 {
			return i + 1
		}
		return -1
	})
	right := ints(func(i int) int {
		if i%2 == 0 && i < n-1 {
			return i + 2
		}
		return -1
	})
	zeros := ints(func(int) int { return 0 })
	cond := ints(func(i int) int { // thresholds 0, 1, 2, ...; leaves alternate 1, -1
		if i%2 == 0 && i < n-1 {
			return i / 2
		}
		return 1 - 2*(i/2%2)
	})
	hess := ints(func(i int) int { return n - i })
	return `{"learner":{"gradient_booster":{"model":{"gbtree_model_param":{"num_trees":"1"},"tree_info":[0],"trees":[` +
		`{"left_children":[` + left + `],"right_children":[` + right + `],"split_indices":[` + zeros + `],` +
		`"split_conditions":[` + cond + `],"default_left":[` + zeros + `],"sum_hessian":[` + hess + `],` +
		`"tree_param":{"num_nodes":"` + fmt.Sprint(n) + `"}}]},"name":"gbtree"},` +
		`"learner_model_param":{"base_score":"0","num_class":"0","num_feature":"1"},"objective":{"name":"reg:squarederror"}},"version":[1,7,4]}`
}

// TestOutputBounds: outputs whose per-row cost or scratch would grow beyond the bounds
// are refused with a reason, while the model still predicts its other outputs.
func TestOutputBounds(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"shap depth", chainModel(257), "output contribs: a tree is 257 levels deep, contributions support up to 256"},
		{"contribs width", edit(t, noNames+"|"+fmt.Sprintf(features, 1<<24)+`|"num_class":"0"=>"num_class":"8"`),
			"output contribs: (num_feature+1)*groups = 134217736 values per row, contributions support up to 67108864"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := forest.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Width(forest.OutputContribs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Width(contribs): error %v, want it to contain %q", err, tc.want)
			}
			if _, err := m.Width(forest.OutputMargin); err != nil {
				t.Fatalf("Width(margin): %v", err)
			}
		})
	}
	// One level less deep has contributions, and they add up to the margin.
	m, err := forest.Parse([]byte(chainModel(256)))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float32{-1, 3.5, 100, 200, 600, nan} {
		c, err := m.Predict(nil, []float32{x}, 1, forest.OutputContribs)
		if err != nil {
			t.Fatal(err)
		}
		mg, _ := m.Predict(nil, []float32{x}, 1, forest.OutputMargin)
		if d := c[0] + c[1] - mg[0]; d*d > 1e-8 {
			t.Errorf("x=%v: contributions %v do not add up to margin %v", x, c, mg[0])
		}
	}
}

// TestScratchBoundedByRow: per-call scratch grows with one row's width, not with a
// block of rows: a wide model (many features or many classes) does not make a call
// allocate blockRows times a row.
func TestScratchBoundedByRow(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	const nrows = 64
	tests := []struct {
		name  string
		doc   string
		feats int
		kind  forest.OutputKind
		limit uint64 // bytes one call may allocate
	}{
		// Margin kernels keep 8 bytes of keys per feature and row (512 KiB per row here).
		{"65536 features", edit(t, noNames+"|"+fmt.Sprintf(features, 1<<16)), 1 << 16, forest.OutputDefault, 2 << 20},
		// softmax keeps a block of margins, 256 KiB per row here.
		{"65536 classes", edit(t, `"num_class":"0"=>"num_class":"65536"|"name":"reg:squarederror"=>"name":"multi:softmax"`), 2, forest.OutputDefault, 2 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := forest.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			rows := make([]float32, nrows*tc.feats)
			w, err := m.Width(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, 0, nrows*w)
			// Two collections empty the scratch pool (and its victim cache).
			runtime.GC()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := m.Predict(dst, rows, nrows, tc.kind); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > tc.limit {
				t.Errorf("one call of %d rows allocated %d bytes, want at most %d", nrows, got, tc.limit)
			}
		})
	}
}
