package train

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/gangboost/gangboost/internal/training/dataset"
)

// agreeOnData completes the whole-input facts of matrices that ranks read in shares
// (dataset.Matrix.Partial: part files, row groups or byte ranges): the total row count, the
// label range and the class names of a text label, which each rank knows only for its own
// rows. Afterwards every rank holds the same facts, and text labels index the same sorted class
// list everywhere, as when every rank read the whole input. Without partial matrices it does
// nothing (and calls no collective).
func agreeOnData(c collective, rank, world int, trainM, evalM *dataset.Matrix) error {
	if !trainM.Partial && (evalM == nil || !evalM.Partial) {
		return nil
	}
	ms := []*dataset.Matrix{trainM}
	if evalM != nil {
		ms = append(ms, evalM)
	}
	// Per rank and matrix: rows, label min, label max, whether labels are text; then the length
	// of the rank's class list as JSON.
	const per = 4
	slots := len(ms)*per + 1
	all := make([]float64, world*slots)
	mine := all[rank*slots : (rank+1)*slots]
	var local []string
	for k, m := range ms {
		v := mine[k*per : (k+1)*per]
		v[0], v[1], v[2] = float64(m.Rows), float64(m.LabelMin), float64(m.LabelMax)
		if m.Classes != nil {
			v[3] = 1
			local = append(local, m.Classes...)
		}
	}
	slices.Sort(local)
	local = slices.Compact(local)
	js, err := json.Marshal(local)
	if err != nil {
		return err
	}
	mine[len(ms)*per] = float64(len(js))
	if err := c.allreduceSum(all); err != nil {
		return fmt.Errorf("agree on the data read in shares: %w", err)
	}
	text := false
	for k, m := range ms {
		what := "training"
		if k == 1 {
			what = "evaluation"
		}
		total, lo, hi := 0, math.Inf(1), math.Inf(-1)
		var numericRank, textRank = -1, -1
		for r := range world {
			v := all[r*slots+k*per : r*slots+(k+1)*per]
			if v[0] == 0 {
				return &gangError{fmt.Errorf("rank %d of %d read no rows of the %s data: the data has too few part files, row groups or lines for %d ranks; use fewer ranks, or more, smaller parts",
					r, world, what, world)}
			}
			total += int(v[0])
			lo, hi = min(lo, v[1]), max(hi, v[2])
			if v[3] == 1 {
				textRank = r
			} else {
				numericRank = r
			}
		}
		if textRank >= 0 && numericRank >= 0 {
			return &gangError{fmt.Errorf("label %q of the %s data holds class names on rank %d and numbers on rank %d: the part files disagree; every part needs labels of one kind",
				m.LabelName, what, textRank, numericRank)}
		}
		text = text || textRank >= 0
		m.TotalRows = total
		m.LabelMin, m.LabelMax = float32(lo), float32(hi)
	}
	if !text {
		return nil
	}
	// The class names: every rank's list travels to every rank, one broadcast per rank.
	var union []string
	for r := range world {
		buf := make([]byte, int(all[r*slots+len(ms)*per]))
		if r == rank {
			copy(buf, js)
		}
		if world > 1 {
			if err := c.broadcast(buf, r); err != nil {
				return fmt.Errorf("agree on the class names: %w", err)
			}
		}
		var names []string
		if err := json.Unmarshal(buf, &names); err != nil {
			return fmt.Errorf("agree on the class names: from rank %d: %w", r, err)
		}
		union = append(union, names...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	for _, m := range ms {
		for i, l := range m.Labels {
			k, _ := slices.BinarySearch(union, m.Classes[int(l)])
			m.Labels[i] = float32(k)
		}
		m.Classes = union
		m.LabelMin, m.LabelMax = 0, float32(len(union)-1)
	}
	return nil
}
