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
// label range, the class names of a text label and the category names of text feature columns,
// which each rank knows only for its own rows. Afterwards every rank holds the same facts, text
// labels index the same sorted class list and text features the same sorted category lists
// everywhere, as when every rank read the whole input. The categories are the training data's:
// an evaluation row's category the training data lacks becomes a missing value. Without partial
// matrices it does nothing (and calls no collective).
func agreeOnData(c collective, rank, world int, trainM, evalM *dataset.Matrix) error {
	if !trainM.Partial && (evalM == nil || !evalM.Partial) {
		return nil
	}
	ms := []*dataset.Matrix{trainM}
	if evalM != nil {
		ms = append(ms, evalM)
	}
	// Per rank and matrix: rows, label min, label max, whether labels are text; then the length
	// of the rank's names (class and category lists) as JSON, and whether its training data has
	// text columns.
	const per = 4
	slots := len(ms)*per + 2
	all := make([]float64, world*slots)
	mine := all[rank*slots : (rank+1)*slots]
	var local rankNames
	for k, m := range ms {
		v := mine[k*per : (k+1)*per]
		v[0], v[1], v[2] = float64(m.Rows), float64(m.LabelMin), float64(m.LabelMax)
		if m.Classes != nil {
			v[3] = 1
			local.Classes = append(local.Classes, m.Classes...)
		}
	}
	slices.Sort(local.Classes)
	local.Classes = slices.Compact(local.Classes)
	local.Categories = trainM.Categories
	js, err := json.Marshal(local)
	if err != nil {
		return err
	}
	mine[len(ms)*per] = float64(len(js))
	if trainM.Categories != nil {
		mine[len(ms)*per+1] = 1
	}
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
	textCols := 0
	for r := range world {
		textCols += int(all[r*slots+len(ms)*per+1])
	}
	if textCols > 0 && textCols < world {
		return &gangError{fmt.Errorf("%d of %d ranks read text feature columns (categories) and the others none: the part files disagree in their columns; every part needs the same column types",
			textCols, world)}
	}
	if !text && textCols == 0 {
		return nil
	}
	// The names: every rank's lists travel to every rank, one broadcast per rank.
	var union rankNames
	for r := range world {
		buf := make([]byte, int(all[r*slots+len(ms)*per]))
		if r == rank {
			copy(buf, js)
		}
		if world > 1 {
			if err := c.broadcast(buf, r); err != nil {
				return fmt.Errorf("agree on the class and category names: %w", err)
			}
		}
		var names rankNames
		if err := json.Unmarshal(buf, &names); err != nil {
			return fmt.Errorf("agree on the class and category names: from rank %d: %w", r, err)
		}
		union.Classes = append(union.Classes, names.Classes...)
		if union.Categories == nil && names.Categories != nil {
			union.Categories = make([][]string, len(names.Categories))
		}
		if len(names.Categories) != len(union.Categories) {
			return &gangError{fmt.Errorf("rank %d read %d feature columns, another rank %d: the part files disagree in their columns", r, len(names.Categories), len(union.Categories))}
		}
		for j, c := range names.Categories {
			if c != nil && union.Categories[j] == nil {
				union.Categories[j] = []string{} // a text column, whose rows may all be missing
			}
			union.Categories[j] = append(union.Categories[j], c...)
		}
	}
	for j, c := range union.Categories {
		if c != nil {
			slices.Sort(c)
			union.Categories[j] = slices.Compact(c)
		}
	}
	for _, m := range ms {
		m.Recode(union.Categories)
	}
	if !text {
		return nil
	}
	slices.Sort(union.Classes)
	union.Classes = slices.Compact(union.Classes)
	for _, m := range ms {
		for i, l := range m.Labels {
			k, _ := slices.BinarySearch(union.Classes, m.Classes[int(l)])
			m.Labels[i] = float32(k)
		}
		m.Classes = union.Classes
		m.LabelMin, m.LabelMax = 0, float32(len(union.Classes)-1)
	}
	return nil
}

// rankNames are the names one rank read: the classes of its text labels (training and
// evaluation data), and the categories of its training data's text columns (nil for numeric
// columns).
type rankNames struct {
	Classes    []string   `json:"classes,omitempty"`
	Categories [][]string `json:"categories,omitempty"`
}
