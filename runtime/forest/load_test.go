package forest_test

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

var nan = float32(math.NaN())

func TestTinyModelPredictions(t *testing.T) {
	m, err := forest.Parse([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumFeatures() != 2 || m.NumGroups() != 1 || m.NumTrees() != 2 || m.Objective() != "reg:squarederror" {
		t.Fatalf("got features %d groups %d trees %d objective %q", m.NumFeatures(), m.NumGroups(), m.NumTrees(), m.Objective())
	}
	tests := []struct {
		row    [2]float32
		value  float32
		leaves [2]float32
	}{
		{[2]float32{1, 1}, 0.5 + 1 - 0.25, [2]float32{2, 3}},
		{[2]float32{0, -1}, 0.5 - 1 + 0.25, [2]float32{1, 4}},
		{[2]float32{nan, nan}, 0.5 - 1 - 0.25, [2]float32{1, 3}}, // default directions
		{[2]float32{0.5, 0}, 0.5 + 1 - 0.25, [2]float32{2, 3}},   // x == threshold goes right
		{[2]float32{float32(math.Inf(-1)), float32(math.Inf(1))}, 0.5 - 1 - 0.25, [2]float32{1, 3}},
	}
	for _, tc := range tests {
		got, err := m.Predict(nil, tc.row[:], 1, forest.OutputDefault)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != tc.value {
			t.Errorf("row %v: value %v, want %v", tc.row, got[0], tc.value)
		}
		leaves, err := m.Predict(nil, tc.row[:], 1, forest.OutputLeaf)
		if err != nil {
			t.Fatal(err)
		}
		if leaves[0] != tc.leaves[0] || leaves[1] != tc.leaves[1] {
			t.Errorf("row %v: leaves %v, want %v", tc.row, leaves, tc.leaves)
		}
		// Batches take another kernel; pad to a batch of 9 copies.
		var rows []float32
		for i := 0; i < 9; i++ {
			rows = append(rows, tc.row[:]...)
		}
		batch, _ := m.Predict(nil, rows, 9, forest.OutputDefault)
		for i, v := range batch {
			if v != tc.value {
				t.Errorf("row %v, batch position %d: %v, want %v", tc.row, i, v, tc.value)
			}
		}
	}
}

func TestWidthAndOutputErrors(t *testing.T) {
	m, err := forest.Parse([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind  forest.OutputKind
		width int
		err   string
	}{
		{forest.OutputDefault, 1, ""},
		{forest.OutputMargin, 1, ""},
		{forest.OutputLabel, 1, ""},
		{forest.OutputLeaf, 2, ""},
		{forest.OutputContribs, 3, ""},
		{forest.OutputProba, 0, "not a classifier"},
		{forest.OutputKind(42), 0, "unknown output kind"},
	}
	for _, tc := range tests {
		w, err := m.Width(tc.kind)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Width(%v): error %v, want %q", tc.kind, err, tc.err)
			}
			if _, err := m.Predict(nil, []float32{1, 2}, 1, tc.kind); err == nil {
				t.Errorf("Predict(%v): no error", tc.kind)
			}
			continue
		}
		if err != nil || w != tc.width {
			t.Errorf("Width(%v) = %d, %v; want %d", tc.kind, w, err, tc.width)
		}
	}
	if _, err := m.Predict(nil, []float32{1, 2, 3}, 1, forest.OutputDefault); err == nil || !strings.Contains(err.Error(), "want nrows*num_feature = 1*2 = 2") {
		t.Errorf("wrong row length: error %v", err)
	}
	if _, err := m.Predict(nil, nil, -1, forest.OutputDefault); err == nil {
		t.Errorf("negative nrows: no error")
	}
}

func TestPredictAppendsWithoutAllocating(t *testing.T) {
	m, err := forest.Parse([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	dst := []float32{7}
	dst, err = m.Predict(dst, []float32{1, 1, 0, -1}, 2, forest.OutputDefault)
	if err != nil || len(dst) != 3 || dst[0] != 7 || dst[1] != 1.25 || dst[2] != -0.25 {
		t.Fatalf("Predict appended %v, %v", dst, err)
	}
	if raceEnabled {
		return // the pools drop buffers at random under the race detector
	}
	rows := make([]float32, 2*100)
	buf := make([]float32, 0, 100*3)
	for _, kind := range []forest.OutputKind{forest.OutputDefault, forest.OutputLeaf, forest.OutputContribs} {
		allocs := testing.AllocsPerRun(50, func() {
			buf, _ = m.Predict(buf[:0], rows, 100, kind)
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per call with capacity", kind, allocs)
		}
	}
}

func TestConcurrentPredict(t *testing.T) {
	m, err := forest.Parse([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	rows := []float32{1, 1, 0, -1, nan, nan, 0.5, 0}
	want, _ := m.Predict(nil, rows, 4, forest.OutputContribs)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []float32
			for i := 0; i < 200; i++ {
				dst, _ = m.Predict(dst[:0], rows, 4, forest.OutputContribs)
				for j := range want {
					if dst[j] != want[j] {
						t.Errorf("concurrent contribs differ at %d: %v vs %v", j, dst[j], want[j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestNonFiniteTokens: XGBoost writes NaN and infinities as bare NaN / Infinity
// tokens, which JSON does not allow; they must load, and a NaN leaf predicts NaN.
func TestNonFiniteTokens(t *testing.T) {
	js := strings.Replace(foresttest.TinyModel, `"loss_changes":[1E0,0E0,0E0]`, `"loss_changes":[NaN,Infinity,-Infinity]`, 1)
	js = strings.Replace(js, `"split_conditions":[5E-1,-1E0,1E0]`, `"split_conditions":[5E-1,NaN,-Infinity]`, 1)
	m, err := forest.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Predict(nil, []float32{0, 0, 1, 0}, 2, forest.OutputDefault)
	if !math.IsNaN(float64(got[0])) || !math.IsInf(float64(got[1]), -1) {
		t.Fatalf("predictions %v, want [NaN -Inf]", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string // a replacement applied to foresttest.TinyModel, "old=>new", or a whole document
		want string
	}{
		{"empty", "", "unexpected end of input"},
		{"not json", "hello", `not an XGBoost model: the file is text starting with "hello"`},
		{"dump_model output", `[{"nodeid":0,"leaf":0.5}]`, "expected an object, got array"},
		{"no learner", `{"version":[1,7,4]}`, `no "learner" object`},
		{"trailing garbage", foresttest.TinyModel + "x", "after the top-level value"},
		{"unterminated", foresttest.TinyModel[:len(foresttest.TinyModel)/2], "invalid JSON at byte"},
		{"bad token", `"num_trees":"2"=>"num_trees":2x`, `num_trees: invalid JSON at byte 178: invalid value "2x"`},
		{"missing colon", `"tree_info":[0,0]=>"tree_info"[0,0]`, "expected ':'"},
		{"unknown objective", `"name":"reg:squarederror"=>"name":"reg:weird"`, `unsupported objective "reg:weird"`},
		{"unknown booster", `"name":"gbtree"=>"name":"gbforest"`, `unsupported booster "gbforest"`},
		{"child out of range", `"left_children":[1,-1,-1]=>"left_children":[7,-1,-1]`, "trees[0]: node 0: child 7 out of range [0, 3)"},
		{"cycle", `"left_children":[1,-1,-1]=>"left_children":[0,-1,-1]`, "reached twice"},
		{"feature out of range", `"split_indices":[0,0,0]=>"split_indices":[5,0,0]`, "split_indices 5 out of range [0, 2)"},
		{"array length", `"default_left":[1,0,0]=>"default_left":[1,0]`, "trees[0]: default_left: 2 entries for 3 nodes"},
		{"num_nodes mismatch", `"num_nodes":"3"=>"num_nodes":"4"`, "num_nodes: says 4"},
		{"tree_info length", `"tree_info":[0,0]=>"tree_info":[0]`, "tree_info: 1 entries for 2 trees"},
		{"tree_info group", `"tree_info":[0,0]=>"tree_info":[0,3]`, "tree_info[1]: group 3 out of range"},
		{"num_trees mismatch", `"num_trees":"2"=>"num_trees":"3"`, "num_trees: says 3, file has 2 trees"},
		{"num_feature zero", `"num_feature":"2","num_target"=>"num_feature":"0","num_target"`, "num_feature: expected 1.."},
		{"base_score text", `"base_score":"5E-1"=>"base_score":"half"`, `base_score: expected a number or [numbers], got "half"`},
		{"logistic base_score range", `"name":"reg:squarederror"=>"name":"binary:logistic"` + "|" + `"base_score":"5E-1"=>"base_score":"1.5"`, "base_score 1.5 out of range (0, 1) for objective binary:logistic"},
		{"feature names count", `"feature_names":["f0","f1"]=>"feature_names":["f0"]`, "feature_names: 1 names for 2 features"},
		{"string where array", `"split_indices":[0,0,0]=>"split_indices":"0"`, "split_indices: expected an array, got string"},
		{"multi-target tree", `"num_nodes":"3","size_leaf_vector":"0"=>"num_nodes":"3","size_leaf_vector":"2"`, "multi-target trees (size_leaf_vector=2) are not supported"},
		{"categorical without categories", `"split_type":[0,0,0]=>"split_type":[1,0,0]`, "categorical split without categories"},
		{"deep nesting", `{"learner":{"attributes":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}}", "nesting deeper than 128"},
		{"bad escape", `"f0"=>"f\q"`, `invalid escape \q`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if strings.Contains(doc, "=>") {
				doc = foresttest.TinyModel
				for _, rep := range strings.Split(tc.doc, "|") {
					oldNew := strings.SplitN(rep, "=>", 2)
					if !strings.Contains(doc, oldNew[0]) {
						t.Fatalf("test bug: %q not in the model", oldNew[0])
					}
					doc = strings.Replace(doc, oldNew[0], oldNew[1], 1)
				}
			}
			_, err := forest.Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestErrorPaths checks that an error names where in the document it happened.
func TestErrorPaths(t *testing.T) {
	doc := strings.Replace(foresttest.TinyModel, `"sum_hessian":[8E0,0E0,0E0,3E0,5E0]`, `"sum_hessian":[8,0,{},3,5]`, 1)
	_, err := forest.Parse([]byte(doc))
	want := "learner.gradient_booster.model.trees[1].sum_hessian[2]: expected a number, got object"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestLoggedLogitrawBaseScoreByVersion(t *testing.T) {
	// Since 1.4 base_score enters binary:logitraw unchanged; before, as a logit.
	doc := strings.Replace(foresttest.TinyModel, `"name":"reg:squarederror"`, `"name":"binary:logitraw"`, 1)
	doc = strings.Replace(doc, `"base_score":"5E-1"`, `"base_score":"7.5E-1"`, 1)
	row := []float32{1, 1} // trees add 1 - 0.25
	for _, tc := range []struct {
		version string
		margin  float32
	}{
		{"[1,7,4]", 0.75 + 0.75},
		{"[2,1,0]", 0.75 + 0.75},
		{"[1,2,0]", float32(-math.Log(1/0.75-1)) + 0.75},
	} {
		m, err := forest.Parse([]byte(strings.Replace(doc, `"version":[1,7,4]`, `"version":`+tc.version, 1)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := m.Predict(nil, row, 1, forest.OutputMargin)
		if math.Abs(float64(got[0]-tc.margin)) > 1e-6 {
			t.Errorf("version %s: margin %v, want %v", tc.version, got[0], tc.margin)
		}
	}
}

// TestLayoutVariants: the same model as written by other XGBoost versions and writers.
func TestLayoutVariants(t *testing.T) {
	row := []float32{1, 1}
	for _, tc := range []struct {
		name string
		reps []string // old=>new
		want []float32
	}{
		{"1.0 boolean default_left", []string{`"default_left":[1,0,0]=>"default_left":[true,false,false]`, `"default_left":[0,1,1,0,0]=>"default_left":[false,true,true,false,false]`}, []float32{1.25}},
		{"2.x numbers and iteration_indptr", []string{`"num_trees":"2"=>"num_trees":2`, `"tree_info":[0,0]=>"iteration_indptr":[0,1,2],"tree_info":[0,0]`, `"num_feature":"2","num_target"=>"num_feature":2,"num_target"`}, []float32{1.25}},
		{"3.x bracketed base_score", []string{`"base_score":"5E-1"=>"base_score":"[5E-1]"`}, []float32{1.25}},
		{"numeric base_score", []string{`"base_score":"5E-1"=>"base_score":0.5`}, []float32{1.25}},
		{"escaped strings", []string{`"name":"reg:squarederror"=>"name":"reg\u003asquarederror"`}, []float32{1.25}},
		{"whitespace", []string{`"tree_info":[0,0]=>"tree_info" :	[ 0 ,
			0 ] `}, []float32{1.25}},
		{"multi-target intercepts", []string{`"tree_info":[0,0]=>"tree_info":[0,1]`, `"num_target":"1"=>"num_target":"2"`, `"base_score":"5E-1"=>"base_score":"[1E0,2E0]"`}, []float32{1 + 1, 2 - 0.25}},
	} {
		doc := foresttest.TinyModel
		for _, rep := range tc.reps {
			oldNew := strings.SplitN(rep, "=>", 2)
			if !strings.Contains(doc, oldNew[0]) {
				t.Fatalf("%s: test bug: %q not in the model", tc.name, oldNew[0])
			}
			doc = strings.Replace(doc, oldNew[0], oldNew[1], 1)
		}
		m, err := forest.Parse([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, err := m.Predict(nil, row, 1, forest.OutputDefault)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v, %v", tc.name, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
