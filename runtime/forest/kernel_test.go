package forest

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// kernelBenchModel is 100 full trees of depth 6 over 20 features, the shape of
// bench_test.go's model, built without libxgboost; rows have 5% missing values.
func kernelBenchModel(b *testing.B) (*Model, []float32) {
	rng := rand.New(rand.NewSource(1))
	m, err := Parse([]byte(randomTreesModel(rng, 100, 6, 20)))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]float32, 1000*20)
	for i := range rows {
		rows[i] = float32(rng.NormFloat64())
		if rng.Float64() < 0.05 {
			rows[i] = float32(math.NaN())
		}
	}
	return m, rows
}

// BenchmarkMargins measures the margin kernels on one core: rowMargins (one row) and
// blockMargins (a batch of 1000).
func BenchmarkMargins(b *testing.B) {
	m, rows := kernelBenchModel(b)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	out := make([]float32, 1000)
	b.Run("row", func(b *testing.B) {
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			k := i % 1000
			m.margins(out[:1], rows[k*20:(k+1)*20], 1)
		}
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/row")
	})
	b.Run("batch1000", func(b *testing.B) {
		cpu0 := processCPU()
		for b.Loop() {
			m.margins(out, rows, 1000)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/row")
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*1000), "cpu-ns/row")
	})
}

// TestKernelLayouts: every key layout the margin kernels choose by row width (eight
// lanes with 16-bit or 32-bit feature offsets, one lane for very wide rows) gives the
// bounds-checked reference walk's margins, for batches with a partial lane group and
// for single rows.
func TestKernelLayouts(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		feats  int
		lanes  int
		feat16 bool
		ntrees int
		depth  int
	}{
		{20, 8, true, 30, 6},
		{1024, 8, true, 10, 6},
		{1025, 8, false, 10, 6},
		{5000, 1, true, 10, 6},
		{9000, 1, false, 10, 6},
	} {
		t.Run(fmt.Sprint(tc.feats, " features"), func(t *testing.T) {
			m, err := Parse([]byte(randomTreesModel(rng, tc.ntrees, tc.depth, tc.feats)))
			if err != nil {
				t.Fatal(err)
			}
			if m.lanes != tc.lanes || (m.fast.feat16 != nil) != tc.feat16 {
				t.Fatalf("lanes %d, 16-bit offsets %v; want %d, %v", m.lanes, m.fast.feat16 != nil, tc.lanes, tc.feat16)
			}
			const nrows = 77
			rows := make([]float32, nrows*tc.feats)
			for i := range rows {
				rows[i] = float32(rng.NormFloat64())
				if rng.Float64() < 0.2 {
					rows[i] = float32(math.NaN())
				}
			}
			want := m.referenceMargins(rows, nrows)
			got, err := m.Predict(nil, rows, nrows, OutputMargin)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < nrows; r++ {
				one, _ := m.Predict(nil, rows[r*tc.feats:(r+1)*tc.feats], 1, OutputMargin)
				if got[r] != want[r] || one[0] != want[r] {
					t.Fatalf("row %d: batch %v, single %v, reference walk %v", r, got[r], one[0], want[r])
				}
			}
		})
	}
}
