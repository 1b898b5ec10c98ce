package forest

import (
	"math/rand"
	"testing"
)

// The SHAP benchmarks' model: 100 full trees of depth 6 over 20 features (paths repeat
// features), the shape of parity/bench_test.go's model, and 64 rows.
func shapBenchModel(b *testing.B) (*Model, []float32) {
	rng := rand.New(rand.NewSource(1))
	m, err := Parse([]byte(randomTreesModel(rng, 100, 6, 20)))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]float32, 64*20)
	for i := range rows {
		rows[i] = float32(rng.NormFloat64())
	}
	return m, rows
}

// BenchmarkContribs measures contributions of a block of 64 rows, tables against exact
// TreeSHAP, per row.
func BenchmarkContribs(b *testing.B) {
	m, rows := shapBenchModel(b)
	const nrows = 64
	dst := make([]float32, 0, nrows*21)
	for _, c := range []struct {
		name string
		m    *Model
	}{{"tables", m}, {"recursive", recursiveOnly(m)}} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := processCPU()
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = c.m.contribsInto(dst[:0], rows, nrows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nrows), "ns/row")
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*nrows), "cpu-ns/row")
		})
	}
}

// BenchmarkShapTree measures the two halves of a tabled tree's contributions for one
// row, per tree: the sweep that finds the edges the row leaves (keySweep; coldPatterns,
// the node walk it replaces where no split is categorical) and the leaves' shares
// (pathTreeShap: shapLeaves8 where the CPU has it, else the Go loop).
func BenchmarkShapTree(b *testing.B) {
	m, rows := shapBenchModel(b)
	ps := m.shap.path
	nf := m.NumFeatures()
	keys := make([]uint32, 2*nf)
	cold := make([]uint32, ps.maxNodes)
	phi := make([]float64, nf+1)
	perTree := func(b *testing.B, each func(t int)) {
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			each(i % len(m.trees))
		}
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/tree")
	}
	rowKeys(keys, rows[:nf], 0, 1)
	b.Run("keySweep", func(b *testing.B) {
		perTree(b, func(t int) { keySweep(ps.trees[t].sweep, keys, cold[:ps.trees[t].nodes]) })
	})
	b.Run("coldPatterns", func(b *testing.B) {
		perTree(b, func(t int) { m.coldPatterns(rows[:nf], m.trees[t].root, cold[:ps.trees[t].nodes]) })
	})
	b.Run("leaves", func(b *testing.B) {
		perTree(b, func(t int) {
			pt := &ps.trees[t]
			c := cold[:pt.nodes]
			keySweep(pt.sweep, keys, c)
			m.pathTreeShap(phi, pt, c)
		})
	})
}
