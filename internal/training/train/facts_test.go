package train

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gangboost/gangboost/internal/training/dataset"
)

// runAgreeOnData runs agreeOnData on one goroutine per matrix, as the ranks of a gang would.
func runAgreeOnData(ms []*dataset.Matrix) []error {
	f := newFakeCollective(len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for r, m := range ms {
		wg.Go(func() { errs[r] = agreeOnData(&fakeRank{f: f, rank: r}, r, len(ms), m, nil) })
	}
	wg.Wait()
	return errs
}

func TestAgreeOnDataCompletesShardFacts(t *testing.T) {
	// Three ranks that read different parts: each saw only some classes.
	ms := []*dataset.Matrix{
		{Rows: 2, Labels: []float32{0, 1}, Classes: []string{"cat", "dog"}, TotalRows: 2, Partial: true},
		{Rows: 1, Labels: []float32{0}, Classes: []string{"ant"}, TotalRows: 1, Partial: true},
		{Rows: 3, Labels: []float32{1, 0, 1}, Classes: []string{"cat", "emu"}, TotalRows: 3, Partial: true},
	}
	for r, err := range runAgreeOnData(ms) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	want := [][]float32{{1, 2}, {0}, {3, 1, 3}}
	for r, m := range ms {
		if !slices.Equal(m.Classes, []string{"ant", "cat", "dog", "emu"}) || !slices.Equal(m.Labels, want[r]) || m.TotalRows != 6 || m.LabelMax != 3 {
			t.Errorf("rank %d: classes %v labels %v total %d max %v; want [ant cat dog emu] %v 6 3", r, m.Classes, m.Labels, m.TotalRows, m.LabelMax, want[r])
		}
	}

	num := []*dataset.Matrix{
		{Rows: 2, Labels: []float32{0, 4}, LabelMin: 0, LabelMax: 4, Partial: true},
		{Rows: 1, Labels: []float32{-1}, LabelMin: -1, LabelMax: -1, Partial: true},
	}
	runAgreeOnData(num)
	for r, m := range num {
		if m.LabelMin != -1 || m.LabelMax != 4 || m.TotalRows != 3 {
			t.Errorf("rank %d: label range [%v, %v] total %d, want [-1, 4] 3", r, m.LabelMin, m.LabelMax, m.TotalRows)
		}
	}
}

func TestAgreeOnDataRefusesARankWithoutRows(t *testing.T) {
	ms := []*dataset.Matrix{{Rows: 2, Labels: []float32{0, 1}, Partial: true}, {Partial: true}}
	for r, err := range runAgreeOnData(ms) {
		if err == nil || !strings.Contains(err.Error(), "rank 1 of 2 read no rows") {
			t.Errorf("rank %d: %v, want every rank to name rank 1", r, err)
		}
	}
}
