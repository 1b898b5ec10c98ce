package main

import (
	"math"
	"math/rand"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
)

// A 3-rank gang trains the models XGBoost 2.0 brought (vector-leaf multi-target trees, two
// quantiles in one model), and the runtime's evaluator answers on the model file what libxgboost
// 3.0 answers on the same file.
func TestGangModelsOfXGBoost3ServeAsLibxgboost(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "train.csv")
	writeCSV(t, csv, 3000, 6, 5)
	cases := []struct {
		name    string
		args    []string
		outputs int // values per row
	}{
		{"multi_output_tree", []string{"--dataset", "iris", "--objective", "multi:softprob", "--param", "multi_strategy=multi_output_tree"}, 3},
		{"quantiles", []string{"--train", csv, "--label", "y", "--objective", "reg:quantileerror", "--param", "quantile_alpha=[0.1,0.9]"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			modelDir := filepath.Join(dir, c.name)
			args := append([]string{"--local", "2", "--num-round", "15", "--max-depth", "4", "--nthread", "1", "--model-dir", modelDir}, c.args...)
			if out, err := exec.Command(trainerBin, args...).CombinedOutput(); err != nil {
				t.Fatalf("gangboost-train %v: %v\n%s", args, err, out)
			}
			md, err := modeldir.ReadMetadata(modelDir)
			if err != nil {
				t.Fatal(err)
			}
			if md.WorldSize != 3 {
				t.Fatalf("metadata: world size %d, want 3", md.WorldSize)
			}
			path := filepath.Join(modelDir, "model.json")
			bst, err := xgb.LoadBooster(path)
			if err != nil {
				t.Fatal(err)
			}
			defer bst.Free()
			m, err := forest.Load(path)
			if err != nil {
				t.Fatalf("the runtime cannot load %s: %v", path, err)
			}
			const rows = 500
			feats := m.NumFeatures()
			r := rand.New(rand.NewSource(9))
			x := make([]float32, rows*feats)
			for i := range x {
				if r.Intn(10) == 0 {
					x[i] = float32(math.NaN())
				} else {
					x[i] = float32(r.NormFloat64() * 2)
				}
			}
			want, _, err := bst.PredictDense(x, rows, feats, float32(math.NaN()), xgb.PredictOptions{Type: xgb.PredictValue})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Predict(nil, x, rows, forest.OutputDefault)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != rows*c.outputs || len(got) != len(want) {
				t.Fatalf("libxgboost gives %d values, the runtime %d; want %d rows x %d", len(want), len(got), rows, c.outputs)
			}
			exact, maxAbs := 0, 0.0
			for i := range want {
				d := math.Abs(float64(got[i]) - float64(want[i]))
				if d == 0 {
					exact++
				}
				maxAbs = max(maxAbs, d)
			}
			// float32 sums of the same leaves in another order may differ in the last bit (the
			// parity zoo's bound, runtime/forest/parity).
			if maxAbs > 1e-6 {
				t.Fatalf("the runtime differs from libxgboost %s by up to %g (%d of %d values exact)", xgb.Version(), maxAbs, exact, len(want))
			}
			t.Logf("%d of %d values exact, max |d| %.2g", exact, len(want), maxAbs)
		})
	}
}
