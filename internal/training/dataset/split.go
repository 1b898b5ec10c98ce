package dataset

import (
	"math"
	"math/rand/v2"
	"slices"
)

// SplitTrainTest moves a testFraction of m's rows into test and the rest into train, the same way
// for the same seed on every machine and Go version (a PCG stream and our own shuffle, not
// math/rand's unspecified helpers). With class labels the split is stratified: each class gives
// the same fraction, so a small data set like Iris keeps every class in both parts. Rows keep
// their original order within each part.
func SplitTrainTest(m *Matrix, testFraction float64, seed int64) (train, test *Matrix) {
	testFraction = min(max(testFraction, 0), 1)
	rng := rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)
	var groups [][]int
	if m.Classes != nil {
		groups = make([][]int, len(m.Classes))
		for i, l := range m.Labels {
			k := int(l)
			if k >= 0 && k < len(groups) {
				groups[k] = append(groups[k], i)
			}
		}
	} else {
		all := make([]int, m.Rows)
		for i := range all {
			all[i] = i
		}
		groups = [][]int{all}
	}
	isTest := make([]bool, m.Rows)
	tests := 0
	for _, g := range groups {
		// Fisher-Yates with a plain modulo: the bias is far below anything a split can show.
		for i := len(g) - 1; i > 0; i-- {
			j := int(rng.Uint64() % uint64(i+1))
			g[i], g[j] = g[j], g[i]
		}
		n := int(math.Round(testFraction * float64(len(g))))
		for _, i := range g[:n] {
			isTest[i] = true
		}
		tests += n
	}
	// Allocated at their final size: grown by append, the two parts would take up to twice the
	// matrix again while it is still held.
	train, test = m.emptyLike(), m.emptyLike()
	train.Data, train.Labels = make([]float32, 0, (m.Rows-tests)*m.Cols), make([]float32, 0, m.Rows-tests)
	test.Data, test.Labels = make([]float32, 0, tests*m.Cols), make([]float32, 0, tests)
	for i := 0; i < m.Rows; i++ {
		dst := train
		if isTest[i] {
			dst = test
		}
		dst.Data = append(dst.Data, m.Row(i)...)
		dst.Labels = append(dst.Labels, m.Labels[i])
		dst.Rows++
	}
	return train, test
}

// emptyLike returns a matrix with m's columns, names and whole-input facts and no rows.
func (m *Matrix) emptyLike() *Matrix {
	return &Matrix{Cols: m.Cols, FeatureNames: slices.Clone(m.FeatureNames), LabelName: m.LabelName, Partial: m.Partial,
		Classes: slices.Clone(m.Classes), Categories: slices.Clone(m.Categories), TotalRows: m.TotalRows, LabelMin: m.LabelMin, LabelMax: m.LabelMax,
		Data: []float32{}, Labels: []float32{}}
}
