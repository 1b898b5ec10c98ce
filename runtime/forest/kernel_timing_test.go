package forest

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"
	"time"
)

// The kernel benchmark's model: full trees over features, the shape of parity/bench_test.go's
// model, built without libxgboost.
const (
	kernelTrees    = 100
	kernelDepth    = 6
	kernelFeatures = 20
)

// kernelBenchModel is the kernel benchmark's model and 1000 rows with 5% missing values.
func kernelBenchModel(b *testing.B) (*Model, []float32) {
	rng := rand.New(rand.NewSource(1))
	m, err := Parse([]byte(randomTreesModel(rng, kernelTrees, kernelDepth, kernelFeatures)))
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

// BenchmarkMargins measures the margin kernels on one core: one row (the row kernel, and
// the scalar kernel it replaces where it runs) and a batch of 1000. Besides the cost of a row it reports the CPU time per tree
// and row (cpu-ns/tree/row), the figure that compares across model sizes; the sub-benchmark
// names give the model's trees, depth and features.
func BenchmarkMargins(b *testing.B) {
	m, rows := kernelBenchModel(b)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	out := make([]float32, 1000)
	shape := fmt.Sprintf("%dtrees-depth%d-%dfeatures", kernelTrees, kernelDepth, kernelFeatures)
	report := func(b *testing.B, rows int, cpu0 time.Duration) {
		cpu := float64((processCPU() - cpu0).Nanoseconds()) / float64(b.N*rows)
		b.ReportMetric(cpu, "cpu-ns/row")
		b.ReportMetric(cpu/kernelTrees, "cpu-ns/tree/row")
	}
	b.Run("row/"+shape, func(b *testing.B) {
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			k := i % 1000
			m.margins(out[:1], rows[k*kernelFeatures:(k+1)*kernelFeatures], 1)
		}
		report(b, 1, cpu0)
	})
	b.Run("row-scalar/"+shape, func(b *testing.B) {
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			k := i % 1000
			out[0] = 0
			m.rowMarginsScalar(out[:1], rows[k*kernelFeatures:(k+1)*kernelFeatures])
		}
		report(b, 1, cpu0)
	})
	b.Run("batch1000/"+shape, func(b *testing.B) {
		cpu0 := processCPU()
		for b.Loop() {
			m.margins(out, rows, 1000)
		}
		report(b, 1000, cpu0)
	})
}

// BenchmarkMarginsMulticlass measures one row of the load test's model (Iris: 60 trees
// of 1 to 4 levels, three classes, four features) on one core, the row kernel against
// the scalar kernel.
func BenchmarkMarginsMulticlass(b *testing.B) {
	m, err := Load("../testdata/models/iris/model.json")
	if err != nil {
		b.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	rng := rand.New(rand.NewSource(1))
	rows := make([]float32, 1000*4)
	for i := range rows {
		rows[i] = float32(rng.Float64() * 8)
	}
	ng, trees := m.NumGroups(), len(m.trees)
	out := make([]float32, ng)
	shape := fmt.Sprintf("iris-%dtrees-%dclasses", trees, ng)
	for _, c := range []struct {
		name string
		eval func(out, row []float32)
	}{
		{"row", func(out, row []float32) { m.margins(out, row, 1) }},
		{"row-scalar", m.rowMarginsScalar},
	} {
		b.Run(c.name+"/"+shape, func(b *testing.B) {
			cpu0 := processCPU()
			for i := 0; b.Loop(); i++ {
				k := i % 1000
				clear(out)
				c.eval(out, rows[k*4:(k+1)*4])
			}
			cpu := float64((processCPU() - cpu0).Nanoseconds()) / float64(b.N)
			b.ReportMetric(cpu, "cpu-ns/row")
			b.ReportMetric(cpu/float64(trees), "cpu-ns/tree/row")
		})
	}
}
