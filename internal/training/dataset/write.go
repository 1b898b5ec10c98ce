package dataset

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteCSV writes m as CSV that LoadCSV reads back to the same matrix: a header with the feature
// names and then the label name, and one line per row. Missing values are empty cells; labels of a
// string label column are written as their class names; floats use the shortest text that reads
// back to the same float32.
func (m *Matrix) WriteCSV(w io.Writer) error {
	if len(m.FeatureNames) != m.Cols {
		return fmt.Errorf("write CSV: %d feature names for %d columns", len(m.FeatureNames), m.Cols)
	}
	if len(m.Data) != m.Rows*m.Cols || len(m.Labels) != m.Rows {
		return fmt.Errorf("write CSV: %d values and %d labels for %d rows x %d columns", len(m.Data), len(m.Labels), m.Rows, m.Cols)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	// Names go through encoding/csv so that commas or quotes in them stay one field.
	cw := csv.NewWriter(bw)
	if err := cw.Write(append(append([]string(nil), m.FeatureNames...), m.LabelName)); err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	var line []byte
	for i := 0; i < m.Rows; i++ {
		line = line[:0]
		for _, v := range m.Row(i) {
			line = appendFloat(line, v)
			line = append(line, ',')
		}
		l := m.Labels[i]
		if m.Classes != nil {
			k := int(l)
			if float32(k) != l || k < 0 || k >= len(m.Classes) {
				return fmt.Errorf("write CSV: row %d: label %v is not an index into the %d classes", i, l, len(m.Classes))
			}
			line = appendCSVField(line, m.Classes[k])
		} else {
			line = appendFloat(line, l)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func appendFloat(b []byte, v float32) []byte {
	if math.IsNaN(float64(v)) {
		return b
	}
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}

func appendCSVField(b []byte, s string) []byte {
	needQuotes := false
	for i := 0; i < len(s) && !needQuotes; i++ {
		switch s[i] {
		case ',', '"', '\n', '\r':
			needQuotes = true
		}
	}
	if !needQuotes {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
