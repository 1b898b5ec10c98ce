package forest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// zooModel returns a zoo model file with each old -> new replacement applied once.
func zooModel(t *testing.T, name string, repl ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(foresttest.Testdata(t, "zoo/"+name+"/json/model.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("%s: %q not found", name, repl[i])
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	return []byte(s)
}

// The zoo's quantiles never cross on its test rows; reversed intercepts make them
// cross on every row. Files saved by 3.4 get each row's predictions sorted, as
// XGBoost 3.4 returns them; margins stay unsorted, and files saved before 3.4 are not
// sorted at all.
func TestQuantilePredictionsSortedFrom34(t *testing.T) {
	const base = `"base_score":"[-4.1478047E0,-1.0533224E0,1.4882507E0,4.500627E0]"`
	const crossed = `"base_score":"[2E1,1E1,-1E1,-2E1]"`
	rows := make([]float32, 9*4)
	for _, tc := range []struct {
		version string
		sorted  bool
	}{{`"version":[3,4,1]`, true}, {`"version":[3,3,0]`, false}} {
		m, err := forest.Parse(zooModel(t, "xgb-3.4.1/reg_quantileerror_4", base, crossed, `"version":[3,4,1]`, tc.version))
		if err != nil {
			t.Fatal(err)
		}
		margin, err := m.Predict(nil, rows, 4, forest.OutputMargin)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []forest.OutputKind{forest.OutputDefault, forest.OutputLabel} {
			pred, err := m.Predict(nil, rows, 4, kind)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 4; r++ {
				p, mg := pred[r*4:(r+1)*4], margin[r*4:(r+1)*4]
				if slices.IsSorted(mg) {
					t.Fatalf("%s row %d: margins %v do not cross; the test needs crossing quantiles", tc.version, r, mg)
				}
				want := slices.Clone(mg)
				if tc.sorted {
					slices.Sort(want)
				}
				if !slices.Equal(p, want) {
					t.Errorf("%s %s row %d: %v, want %v (margins %v)", tc.version, kind, r, p, want, mg)
				}
			}
		}
	}
}

// A multi-output gblinear model written by 3.1 to 3.3 with distinct intercepts is
// refused: how those versions combined them is not pinned down by a reference.
func TestLinearVectorBaseScoreBefore34Refused(t *testing.T) {
	_, err := forest.Parse(zooModel(t, "xgb-3.4.1/gblinear_multi", `"version":[3,4,1]`, `"version":[3,2,0]`))
	if err == nil || !strings.Contains(err.Error(), "gblinear model with one intercept per output (4 values) saved by XGBoost 3.2.0 is not supported") {
		t.Fatalf("got %v", err)
	}
	// Equal intercepts mean the same whichever way they are combined.
	m, err := forest.Parse(zooModel(t, "xgb-3.4.1/gblinear_multi", `"version":[3,4,1]`, `"version":[3,2,0]`,
		`"base_score":"[1.8416023E-1,-6.1342454E-1,9.718638E-1,-5.425992E-1]"`, `"base_score":"[2.5E-1,2.5E-1,2.5E-1,2.5E-1]"`))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumGroups() != 4 {
		t.Fatalf("groups %d", m.NumGroups())
	}
}

// Category names saved with a 3.x model (the "cats" encoder) would re-code inputs in
// XGBoost; the evaluator reads codes only, so such a model is refused, not misread.
func TestNamedCategoriesRefused(t *testing.T) {
	_, err := forest.Parse(zooModel(t, "xgb-3.4.1/cat_mixed_reg",
		`"cats":{"enc":[],"feature_segments":[],"sorted_idx":[]}`,
		`"cats":{"enc":[{"type":1,"values":["a","b"]}],"feature_segments":[0,2],"sorted_idx":[0,1]}`))
	if err == nil || !strings.Contains(err.Error(), "cats: the model saves category names") {
		t.Fatalf("got %v", err)
	}
}

// XGBoost 3.3 and later save a dart booster as "gbtree" with weight_drop in the
// model; it reports itself as dart.
func TestDartSavedAsGbtree(t *testing.T) {
	m, err := forest.Load(foresttest.Testdata(t, "zoo/xgb-3.4.1/dart_reg/ubj/model.ubj"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Booster() != "dart" {
		t.Fatalf("booster %q, want dart", m.Booster())
	}
}

// Vector-leaf trees saved by 3.x name each leaf's entry in leaf_weights by its right
// child; an entry out of range or shared by two leaves is not that layout.
func TestVectorLeafIndexChecked(t *testing.T) {
	const right = `"right_children":[2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,0,1,`
	for _, bad := range []string{"0,0,", "0,16,"} {
		_, err := forest.Parse(zooModel(t, "xgb-3.4.1/multi_target_vector_leaf", right, strings.TrimSuffix(right, "0,1,")+bad))
		if err == nil || !strings.Contains(err.Error(), "trees[0]: leaf 16 refers to leaf_weights entry") {
			t.Errorf("right children ...%s: got %v", bad, err)
		}
	}
	m, err := forest.Load(foresttest.Testdata(t, "zoo/xgb-3.4.1/multi_target_vector_leaf/ubj/model.ubj"))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumTrees() != 8 || m.NumGroups() != 3 {
		t.Fatalf("trees %d groups %d, want 8 trees of 3 targets", m.NumTrees(), m.NumGroups())
	}
}

// A field no known model file has is refused, naming it, at every level where it
// could change what the model means.
func TestUnknownFieldRefused(t *testing.T) {
	for _, tc := range []struct{ old, new, path string }{
		{`"version":[3,4,1]`, `"version":[3,4,1],"extra":1`, "extra: unknown field"},
		{`"attributes":{}`, `"attributes":{},"intercept_kind":"x"`, "learner.intercept_kind: unknown field"},
		{`"boost_from_average":"1"`, `"boost_from_average":"1","base_margin_kind":"1"`, "learner.learner_model_param.base_margin_kind: unknown field"},
		{`"name":"gbtree"}`, `"name":"gbtree","tree_weights":[1]}`, "learner.gradient_booster.tree_weights: unknown field"},
		{`"iteration_indptr"`, `"scale":[2],"iteration_indptr"`, "learner.gradient_booster.model.scale: unknown field"},
		{`"id":0`, `"id":0,"leaf_scale":[2]`, "learner.gradient_booster.model.trees[0].leaf_scale: unknown field"},
	} {
		_, err := forest.Parse(zooModel(t, "xgb-3.4.1/reg_squarederror", tc.old, tc.new))
		if err == nil || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: got %v, want %q", tc.new, err, tc.path)
		}
	}
}
