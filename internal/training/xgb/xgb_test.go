package xgb

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// synthetic returns n rows of f features with a linearly separable binary label; every 7th
// cell is missing.
func synthetic(n, f int, seed int64) (data, label []float32) {
	r := rand.New(rand.NewSource(seed))
	data = make([]float32, n*f)
	label = make([]float32, n)
	for i := 0; i < n; i++ {
		var s float32
		for j := 0; j < f; j++ {
			v := float32(r.NormFloat64())
			s += v * float32(j%3-1)
			if (i*f+j)%7 == 0 {
				v = float32(math.NaN())
			}
			data[i*f+j] = v
		}
		if s > 0 {
			label[i] = 1
		}
	}
	return data, label
}

func trainBinary(t *testing.T, rounds int) (*Booster, *DMatrix, []float32) {
	t.Helper()
	// libxgboost keeps per-thread state a DMatrix and its booster must share.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	data, label := synthetic(500, 6, 1)
	d, err := NewDMatrixDense(data, 500, 6, float32(math.NaN()))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetFloatInfo("label", label); err != nil {
		t.Fatal(err)
	}
	b, err := NewBooster(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"objective", "binary:logistic"}, {"max_depth", "4"}, {"tree_method", "hist"}, {"nthread", "1"}} {
		if err := b.SetParam(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < rounds; i++ {
		if err := b.UpdateOneIter(i, d); err != nil {
			t.Fatal(err)
		}
	}
	return b, d, data
}

func TestVersion(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, "3.") {
		t.Fatalf("Version() = %q", v)
	}
}

func TestTrainPredictSaveLoad(t *testing.T) {
	b, d, data := trainBinary(t, 10)
	rows, cols, err := d.Shape()
	if err != nil || rows != 500 || cols != 6 {
		t.Fatalf("Shape() = %d, %d, %v", rows, cols, err)
	}
	line, err := b.EvalOneIter(9, []*DMatrix{d}, []string{"train"})
	if err != nil || !strings.HasPrefix(line, "[9]\ttrain-logloss:") {
		t.Fatalf("EvalOneIter = %q, %v", line, err)
	}
	want, shape, err := b.Predict(d, PredictOptions{})
	if err != nil || len(want) != 500 || len(shape) != 1 || shape[0] != 500 {
		t.Fatalf("Predict: len %d shape %v err %v", len(want), shape, err)
	}
	inplace, _, err := b.PredictDense(data, 500, 6, float32(math.NaN()), PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if want[i] != inplace[i] {
			t.Fatalf("row %d: DMatrix predict %v, in-place %v", i, want[i], inplace[i])
		}
	}
	if n, err := b.NumFeatures(); err != nil || n != 6 {
		t.Fatalf("NumFeatures() = %d, %v", n, err)
	}
	if n, err := b.BoostedRounds(); err != nil || n != 10 {
		t.Fatalf("BoostedRounds() = %d, %v", n, err)
	}
	for _, ext := range []string{"json", "ubj"} {
		path := filepath.Join(t.TempDir(), "model."+ext)
		if err := b.SaveModel(path); err != nil {
			t.Fatal(err)
		}
		fromFile, err := LoadBooster(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := b.ModelBytes(ext)
		if err != nil {
			t.Fatal(err)
		}
		onDisk, _ := os.ReadFile(path)
		if string(raw) != string(onDisk) {
			t.Errorf("%s: ModelBytes differs from SaveModel output", ext)
		}
		fromBytes, err := LoadBoosterBytes(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range []*Booster{fromFile, fromBytes} {
			got, _, err := lb.PredictDense(data, 500, 6, float32(math.NaN()), PredictOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s reload row %d: %v, want %v", ext, i, got[i], want[i])
				}
			}
		}
	}
}

func TestPredictKinds(t *testing.T) {
	b, d, _ := trainBinary(t, 5)
	_, shape, err := b.Predict(d, PredictOptions{Type: PredictContribs})
	if err != nil || len(shape) != 2 || shape[1] != 7 {
		t.Fatalf("contribs shape %v, %v", shape, err)
	}
	_, shape, err = b.Predict(d, PredictOptions{Type: PredictLeaf})
	if err != nil || len(shape) != 2 || shape[1] != 5 {
		t.Fatalf("leaf shape %v, %v", shape, err)
	}
	if _, err := b.DumpJSON(false); err != nil {
		t.Fatal(err)
	}
	if cfg, err := b.Config(); err != nil || !strings.Contains(cfg, "binary:logistic") {
		t.Fatalf("Config() = %.80q, %v", cfg, err)
	}
}

func TestErrorsComeBackAsGoErrors(t *testing.T) {
	b, _, _ := trainBinary(t, 1)
	if err := b.SetParam("objective", "no:such"); err == nil {
		// libxgboost validates the objective lazily, on the next update.
		data, _ := synthetic(10, 6, 2)
		d, _ := NewDMatrixDense(data, 10, 6, float32(math.NaN()))
		if err := b.UpdateOneIter(1, d); err == nil || !strings.Contains(err.Error(), "no:such") {
			t.Fatalf("unknown objective: err = %v", err)
		}
	}
	if _, err := LoadBooster(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: err = %v", err)
	}
	if _, err := NewDMatrixDense(make([]float32, 5), 2, 3, 0); err == nil {
		t.Fatal("ragged dense matrix accepted")
	}
	if _, err := b.ModelBytes("pickle"); err == nil {
		t.Fatal("unknown format accepted")
	}
}
