//go:build cgo

package parity_test

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	xgbgo "github.com/Elvenson/xgboost-go"
	xgbgoact "github.com/Elvenson/xgboost-go/activation"
	xgbgoinf "github.com/Elvenson/xgboost-go/inference"
	xgbgomat "github.com/Elvenson/xgboost-go/mat"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
)

// The benchmark model is the size the runtime's speed goals are stated for: 100 trees
// of depth 6 over 20 features (binary:logistic, hist). All three evaluators score the
// same rows, 5% of the cells missing.
const (
	benchFeatures = 20
	benchTrees    = 100
	benchDepth    = 6
	benchBatch    = 1000
	benchContribs = 100 // rows of a contributions batch
)

type benchSetup struct {
	booster  *xgb.Booster // nthread=1: one core, like one forest call
	booster2 *xgb.Booster // nthread=2: all cores of this machine
	model    *forest.Model
	xgbgo    *xgbgoinf.Ensemble
	rows     []float32
	sparse   xgbgomat.SparseMatrix
}

var (
	benchOnce sync.Once
	bench     benchSetup
	benchErr  error
)

func setupBench(b *testing.B) *benchSetup {
	b.Helper()
	benchOnce.Do(func() { benchErr = buildBench(&bench) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return &bench
}

func buildBench(s *benchSetup) error {
	runtime.LockOSThread() // see train in parity_test.go
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(42))
	const n = 20000
	x := make([]float32, n*benchFeatures)
	y := make([]float32, n)
	for i := 0; i < n; i++ {
		var sum float64
		for j := 0; j < benchFeatures; j++ {
			v := r.NormFloat64()
			sum += v * float64(j%5-2) / 2
			if j%4 == 0 {
				sum += math.Sin(3 * v)
			}
			x[i*benchFeatures+j] = float32(v)
			if r.Float64() < 0.05 {
				x[i*benchFeatures+j] = float32(math.NaN())
			}
		}
		if sum+r.NormFloat64() > 0 {
			y[i] = 1
		}
	}
	d, err := xgb.NewDMatrixDense(x, n, benchFeatures, float32(math.NaN()))
	if err != nil {
		return err
	}
	defer d.Free()
	if err := d.SetFloatInfo("label", y); err != nil {
		return err
	}
	bst, err := xgb.NewBooster(d)
	if err != nil {
		return err
	}
	if err := bst.SetParams(map[string]string{
		"objective": "binary:logistic", "tree_method": "hist", "max_depth": fmt.Sprint(benchDepth),
		"min_child_weight": "0", "learning_rate": "0.1", "nthread": "1", "seed": "1",
	}); err != nil {
		return err
	}
	for i := 0; i < benchTrees; i++ {
		if err := bst.UpdateOneIter(i, d); err != nil {
			return err
		}
	}
	js, err := bst.ModelBytes("json")
	if err != nil {
		return err
	}
	if s.model, err = forest.Parse(js); err != nil {
		return err
	}
	s.booster = bst
	if s.booster2, err = xgb.LoadBoosterBytes(js); err != nil {
		return err
	}
	if err := s.booster2.SetParam("nthread", "2"); err != nil {
		return err
	}
	dump, err := bst.DumpJSON(false)
	if err != nil {
		return err
	}
	if s.xgbgo, err = xgbgo.LoadXGBoostFromJSONBytes(dump, "", 1, benchDepth, &xgbgoact.Logistic{}); err != nil {
		return fmt.Errorf("xgboost-go: %w", err)
	}
	s.rows = x[:benchBatch*benchFeatures]
	s.sparse = toSparse(s.rows, benchBatch, benchFeatures)
	return nil
}

// toSparse converts dense rows to xgboost-go's input: a map per row without the
// missing cells (NaN in the map would be compared, not treated as missing).
func toSparse(rows []float32, n, f int) xgbgomat.SparseMatrix {
	m := xgbgomat.SparseMatrix{Vectors: make([]xgbgomat.SparseVector, n)}
	for i := 0; i < n; i++ {
		v := xgbgomat.SparseVector{}
		for j := 0; j < f; j++ {
			if x := rows[i*f+j]; x == x {
				v[j] = x
			}
		}
		m.Vectors[i] = v
	}
	return m
}

// perRow reports wall time per row and the process CPU time per row. This machine's
// cores are shared with other work, so wall time swings with their load; CPU time
// (getrusage, all threads: libxgboost's OpenMP workers count) is the steadier figure.
func perRow(b *testing.B, rows int, cpuStart time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkPredict(b *testing.B) {
	s := setupBench(b)
	nan := float32(math.NaN())
	single := func(i int) []float32 {
		k := i % benchBatch
		return s.rows[k*benchFeatures : (k+1)*benchFeatures]
	}

	b.Run("forest/row", func(b *testing.B) {
		cpu0 := cpuTime()
		dst := make([]float32, 0, 1)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			dst, _ = s.model.Predict(dst[:0], single(i), 1, forest.OutputDefault)
		}
		perRow(b, 1, cpu0)
	})
	b.Run("forest/batch1000", func(b *testing.B) {
		cpu0 := cpuTime()
		dst := make([]float32, 0, benchBatch)
		b.ReportAllocs()
		for b.Loop() {
			dst, _ = s.model.Predict(dst[:0], s.rows, benchBatch, forest.OutputDefault)
		}
		perRow(b, benchBatch, cpu0)
	})
	// The same batch on one core: Predict splits large batches across GOMAXPROCS
	// cores, so this is the per-core cost behind the figure above.
	b.Run("forest-1core/batch1000", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		cpu0 := cpuTime()
		dst := make([]float32, 0, benchBatch)
		b.ReportAllocs()
		for b.Loop() {
			dst, _ = s.model.Predict(dst[:0], s.rows, benchBatch, forest.OutputDefault)
		}
		perRow(b, benchBatch, cpu0)
	})
	for _, procs := range []int{0, 1} {
		name := "forest"
		if procs == 1 {
			name = "forest-1core"
		}
		b.Run(name+"/contribs-batch100", func(b *testing.B) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			cpu0 := cpuTime()
			dst := make([]float32, 0, benchContribs*(benchFeatures+1))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = s.model.Predict(dst[:0], s.rows[:benchContribs*benchFeatures], benchContribs, forest.OutputContribs)
			}
			perRow(b, benchContribs, cpu0)
		})
	}
	b.Run("forest/contribs-row", func(b *testing.B) {
		cpu0 := cpuTime()
		dst := make([]float32, 0, benchFeatures+1)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			dst, _ = s.model.Predict(dst[:0], single(i), 1, forest.OutputContribs)
		}
		perRow(b, 1, cpu0)
	})
	for _, c := range []struct {
		name string
		bst  *xgb.Booster
	}{{"libxgboost-1thread", s.booster}, {"libxgboost-2threads", s.booster2}} {
		b.Run(c.name+"/row", func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				if _, _, err := c.bst.PredictDense(single(i), 1, benchFeatures, nan, xgb.PredictOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			perRow(b, 1, cpu0)
		})
		b.Run(c.name+"/contribs-row", func(b *testing.B) {
			cpu0 := cpuTime()
			// In-place prediction has no contributions: go through a DMatrix.
			for i := 0; b.Loop(); i++ {
				d, err := xgb.NewDMatrixDense(single(i), 1, benchFeatures, nan)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.bst.Predict(d, xgb.PredictOptions{Type: xgb.PredictContribs}); err != nil {
					b.Fatal(err)
				}
				d.Free()
			}
			perRow(b, 1, cpu0)
		})
		b.Run(c.name+"/contribs-batch100", func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				d, err := xgb.NewDMatrixDense(s.rows[:benchContribs*benchFeatures], benchContribs, benchFeatures, nan)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.bst.Predict(d, xgb.PredictOptions{Type: xgb.PredictContribs}); err != nil {
					b.Fatal(err)
				}
				d.Free()
			}
			perRow(b, benchContribs, cpu0)
		})
		b.Run(c.name+"/batch1000", func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if _, _, err := c.bst.PredictDense(s.rows, benchBatch, benchFeatures, nan, xgb.PredictOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			perRow(b, benchBatch, cpu0)
		})
	}
	b.Run("xgboost-go/row", func(b *testing.B) {
		cpu0 := cpuTime()
		for i := 0; b.Loop(); i++ {
			k := i % benchBatch
			if _, err := s.xgbgo.PredictProba(xgbgomat.SparseMatrix{Vectors: s.sparse.Vectors[k : k+1]}); err != nil {
				b.Fatal(err)
			}
		}
		perRow(b, 1, cpu0)
	})
	b.Run("xgboost-go/batch1000", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := s.xgbgo.PredictProba(s.sparse); err != nil {
				b.Fatal(err)
			}
		}
		perRow(b, benchBatch, cpu0)
	})
}

// BenchmarkLoad measures reading the benchmark model from JSON and UBJSON.
func BenchmarkLoad(b *testing.B) {
	s := setupBench(b)
	for _, format := range []string{"json", "ubj"} {
		data, err := s.booster.ModelBytes(format)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(format, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := forest.Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
