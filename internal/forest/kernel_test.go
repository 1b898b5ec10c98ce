package forest

import (
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
