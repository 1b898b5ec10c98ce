//go:build cgo

package parity_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// runtime/forest/testdata/categorical.json was trained by XGBoost 1.7.4 (Python, enable_categorical)
// on features [num_a, cat_b (12 categories), cat_c (3 categories), num_d] with
// max_cat_to_onehot=4, so it holds both partition splits (cat_b) and one-hot splits
// (cat_c). libxgboost's own predictions from the same file are the reference.
func TestCategoricalParity(t *testing.T) {
	path := foresttest.Testdata(t, "categorical.json")
	m, err := forest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.FeatureTypes(); len(got) != 4 || got[1] != "c" || got[2] != "c" {
		t.Fatalf("FeatureTypes = %v, want [q c c q]", got)
	}
	if got := m.FeatureNames(); len(got) != 4 || got[1] != "cat_b" {
		t.Fatalf("FeatureNames = %v", got)
	}
	bst, err := xgb.LoadBooster(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bst.Free()

	const n = 3000
	r := rand.New(rand.NewSource(5))
	rows := make([]float32, n*4)
	for i := 0; i < n; i++ {
		rows[i*4] = float32(r.NormFloat64())
		rows[i*4+1] = float32(r.Intn(14)) // 12 and 13 were never seen in training
		rows[i*4+2] = float32(r.Intn(3))
		rows[i*4+3] = float32(r.NormFloat64())
		for j := 0; j < 4; j++ {
			if r.Float64() < 0.15 {
				rows[i*4+j] = float32(math.NaN())
			}
		}
	}
	// Values XGBoost treats as invalid categories (negative, >= 2^24) and fractional
	// ones (truncated toward zero) go where libxgboost sends them.
	odd := []float32{-1, -0.5, 2.7, 4.2, 1e9, 16777216, 16777215, 40, 31, 32, 33}
	for i, v := range odd {
		rows[i*4+1] = v
		rows[(i+len(odd))*4+2] = v
	}
	dm, err := xgb.NewDMatrixDense(rows, n, 4, float32(math.NaN()))
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Free()
	for _, k := range []struct {
		kind forest.OutputKind
		typ  xgb.PredictType
	}{
		{forest.OutputDefault, xgb.PredictValue},
		{forest.OutputLeaf, xgb.PredictLeaf},
		{forest.OutputContribs, xgb.PredictContribs},
	} {
		want, _, err := bst.Predict(dm, xgb.PredictOptions{Type: k.typ})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Predict(nil, rows, n, k.kind)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, "categorical "+k.kind.String(), got, want)
	}
	// Single rows agree with the batch.
	batch, _ := m.Predict(nil, rows[:40], 10, forest.OutputDefault)
	for i := 0; i < 10; i++ {
		one, _ := m.Predict(nil, rows[i*4:(i+1)*4], 1, forest.OutputDefault)
		if one[0] != batch[i] {
			t.Fatalf("row %d: single %v, batch %v", i, one[0], batch[i])
		}
	}
}
