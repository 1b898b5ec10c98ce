package dataset

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// MaxCategories bounds the distinct values of one text feature column: a column with more is an
// identifier or free text, not a category, and its names would take the memory of a second data
// set on every rank.
const MaxCategories = 65536

// maxCategoryBytes bounds one category name: longer text is not a category's name.
const maxCategoryBytes = 1024

// categoryColumn numbers the names of one text feature column as they are read. Without a fixed
// list, a name's code is its position in order of first appearance (remapped to sorted order by
// finish); with one (Spec.Categories, an evaluation file), it is the name's position there, and a
// name the list lacks is a missing value, counted in unseen.
type categoryColumn struct {
	codes  map[string]int32
	names  []string // in code order
	fixed  bool
	unseen int
}

func newCategoryColumn(fixed []string) *categoryColumn {
	c := &categoryColumn{codes: make(map[string]int32, len(fixed))}
	if fixed != nil {
		c.fixed, c.names = true, slices.Clone(fixed)
		for i, n := range fixed {
			c.codes[n] = int32(i)
		}
	}
	return c
}

// code is name's value in the matrix, or a message saying why the name is refused.
func (c *categoryColumn) code(name []byte) (float32, string) {
	if k, ok := c.codes[string(name)]; ok {
		return float32(k), ""
	}
	if c.fixed {
		c.unseen++
		return float32(math.NaN()), ""
	}
	if len(name) > maxCategoryBytes {
		return 0, fmt.Sprintf("a category name of %d bytes (at most %d): a text column is read as categories; leave a free-text column out with --features", len(name), maxCategoryBytes)
	}
	if !utf8.Valid(name) {
		return 0, fmt.Sprintf("the category name %q is not UTF-8 text: a text column is read as categories, which are named in the model's metadata.json", name)
	}
	if len(c.names) == MaxCategories {
		return 0, fmt.Sprintf("more than %d distinct values: a column of that many is an identifier or free text, not a category; leave it out with --features", MaxCategories)
	}
	k := int32(len(c.names))
	s := string(name)
	c.codes[s] = k
	c.names = append(c.names, s)
	return float32(k), ""
}

// finishCategories sets m.Categories from the text columns read (cats[j] nil for numeric
// columns): the names sorted, and column j's values renumbered to positions in that order, so
// that a category's code does not depend on the order of the rows. A fixed list is kept as given.
func finishCategories(m *Matrix, cats []*categoryColumn) {
	for j, c := range cats {
		if c == nil {
			continue
		}
		if m.Categories == nil {
			m.Categories = make([][]string, m.Cols)
		}
		m.UnseenCategories += c.unseen
		if c.fixed {
			m.Categories[j] = c.names
			continue
		}
		sorted := append([]string{}, c.names...) // not nil: a text column whose rows are all missing
		slices.Sort(sorted)
		m.Categories[j] = sorted
		recode(m, j, c.names, sorted)
	}
}

// recode renumbers column j of m from positions in from to positions in to, and returns how
// many values became missing because to lacks their name (none when to holds every name of
// from).
func recode(m *Matrix, j int, from, to []string) (missing int) {
	nan := float32(math.NaN())
	at := make([]float32, len(from))
	for k, name := range from {
		if i, ok := slices.BinarySearch(to, name); ok {
			at[k] = float32(i)
		} else {
			at[k] = nan
		}
	}
	for i := 0; i < m.Rows; i++ {
		v := &m.Data[i*m.Cols+j]
		if *v == *v {
			if *v = at[int(*v)]; *v != *v {
				missing++
			}
		}
	}
	return missing
}

// Recode renumbers m's text categorical columns to the sorted category lists in cats (one per
// feature column, nil for numeric ones), as the ranks of a gang agreed them: a name of m that cats
// lack (an evaluation file's category the training data never had) becomes a missing value,
// counted in UnseenCategories.
func (m *Matrix) Recode(cats [][]string) {
	for j, to := range cats {
		if to == nil || m.Categories == nil || m.Categories[j] == nil {
			continue
		}
		m.UnseenCategories += recode(m, j, m.Categories[j], to)
		m.Categories[j] = to
	}
}

// CategoryMap is m's text categorical columns by feature name, each with its sorted names (a
// value's code is its name's position); nil without text categorical columns.
func (m *Matrix) CategoryMap() map[string][]string {
	var out map[string][]string
	for j, c := range m.Categories {
		if c == nil {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[m.FeatureNames[j]] = c
	}
	return out
}

// nameCodes names the categories of the numeric columns spec.Categories lists (a CSV that
// prepare-data wrote holds the codes of its schema.json's categories): each value must be a code
// of the list, an integer from 0 to its length - 1, or missing. Text columns were numbered by the
// list as they were read; names of the list that are not m's features are not m's concern.
func (spec Spec) nameCodes(m *Matrix) error {
	if len(spec.Categories) == 0 {
		return nil
	}
	for j, name := range m.FeatureNames {
		names, ok := spec.Categories[name]
		if !ok || m.Categories != nil && m.Categories[j] != nil {
			continue
		}
		for i := 0; i < m.Rows; i++ {
			v := m.Data[i*m.Cols+j]
			if v != v {
				continue
			}
			if v < 0 || int(v) >= len(names) || v != float32(math.Trunc(float64(v))) {
				return &DataError{File: spec.Path, ColumnName: name, Msg: fmt.Sprintf(
					"row %d of this rank's rows holds %v: the column is categorical with %d named categories, so it holds their codes, integers from 0 to %d; the data and its schema do not belong together",
					i+1, v, len(names), len(names)-1)}
			}
		}
		if m.Categories == nil {
			m.Categories = make([][]string, m.Cols)
		}
		m.Categories[j] = append([]string{}, names...)
	}
	return nil
}
