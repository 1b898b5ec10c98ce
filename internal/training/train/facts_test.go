package train

import (
	"math"
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

func TestAgreeOnDataNumbersCategoriesAlike(t *testing.T) {
	nan := float32(math.NaN())
	// Column 1 names cities; each rank numbered the cities it read, in sorted order.
	ms := []*dataset.Matrix{
		{Rows: 2, Cols: 2, Data: []float32{5, 1, 6, 0}, Labels: []float32{0, 1}, Categories: [][]string{nil, {"Bergen", "Oslo"}}, Partial: true},
		{Rows: 2, Cols: 2, Data: []float32{7, 0, 8, nan}, Labels: []float32{1, 1}, Categories: [][]string{nil, {"Ålesund"}}, Partial: true},
		{Rows: 1, Cols: 2, Data: []float32{9, 1}, Labels: []float32{0}, Categories: [][]string{nil, {"Bodø", "Oslo"}}, Partial: true},
	}
	for r, err := range runAgreeOnData(ms) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	union := []string{"Bergen", "Bodø", "Oslo", "Ålesund"}
	want := [][]float32{{5, 2, 6, 0}, {7, 3, 8, nan}, {9, 2}}
	for r, m := range ms {
		if !slices.Equal(m.Categories[1], union) || m.Categories[0] != nil {
			t.Errorf("rank %d: categories %q, want [nil %q]", r, m.Categories, union)
		}
		for i, v := range m.Data {
			if v != want[r][i] && !(v != v && want[r][i] != want[r][i]) {
				t.Errorf("rank %d: data %v, want %v", r, m.Data, want[r])
				break
			}
		}
	}

	// A rank whose part has no text column: every rank says so, none waits for a broadcast.
	mixed := []*dataset.Matrix{
		{Rows: 1, Cols: 1, Data: []float32{0}, Labels: []float32{0}, Categories: [][]string{{"Oslo"}}, Partial: true},
		{Rows: 1, Cols: 1, Data: []float32{3}, Labels: []float32{0}, Partial: true},
	}
	for r, err := range runAgreeOnData(mixed) {
		if err == nil || !strings.Contains(err.Error(), "1 of 2 ranks read text feature columns") {
			t.Errorf("rank %d: %v, want the disagreement named", r, err)
		}
	}
}
