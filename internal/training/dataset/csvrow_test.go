package dataset

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The fast row parser gives the field-by-field result on every line it accepts.
func FuzzFastRow(f *testing.F) {
	f.Add([]byte("1.5,-2e-3,,x\n"))
	f.Add([]byte("0.1234567,1e22,+.5,\"a\"\n"))
	f.Add([]byte("12345678.87654321,9007199254740993,0.0000000000000000001,y\n"))
	f.Add([]byte("-0.6264538,1.2345e-05,99999999,1\r\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		c := &csvColumns{header: []string{"a", "b", "c", "label"}, featCols: []int{0, 1, 2}, labelCol: 3, role: []int{0, 1, 2, roleLabel}}
		cr := &recordReader{}
		cr.reset(line, 0)
		l, err := cr.nextLine() // as the loaders give fastRow its lines
		if err != nil {
			return
		}
		fast := make([]float32, 3)
		label, ok := c.fastRow(l, fast)
		if !ok {
			return
		}
		label = slices.Clone(label)
		slow := make([]float32, 3)
		slowLabel, _, err := c.row(cr, l, slow, nil, true)
		if err != nil {
			t.Fatalf("fastRow took %q: %v", line, err)
		}
		if !slices.EqualFunc(fast, slow, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) || !bytes.Equal(label, []byte(slowLabel)) {
			t.Fatalf("%q: fast %v %q, field by field %v %q", line, fast, label, slow, slowLabel)
		}
	})
}

// sameMatrix says how b differs from a, or "".
func sameMatrix(a, b *Matrix) string {
	switch {
	case a.Rows != b.Rows || a.Cols != b.Cols || a.TotalRows != b.TotalRows:
		return fmt.Sprintf("shape %dx%d of %d, want %dx%d of %d", b.Rows, b.Cols, b.TotalRows, a.Rows, a.Cols, a.TotalRows)
	case !slices.EqualFunc(a.Data, b.Data, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }):
		return fmt.Sprintf("data %v, want %v", b.Data, a.Data)
	case !slices.Equal(a.Labels, b.Labels):
		return fmt.Sprintf("labels %v, want %v", b.Labels, a.Labels)
	case !slices.Equal(a.Classes, b.Classes) || (a.Classes == nil) != (b.Classes == nil):
		return fmt.Sprintf("classes %q, want %q", b.Classes, a.Classes)
	case a.LabelMin != b.LabelMin || a.LabelMax != b.LabelMax:
		return fmt.Sprintf("label range %v..%v, want %v..%v", b.LabelMin, b.LabelMax, a.LabelMin, a.LabelMax)
	case !slices.Equal(a.FeatureNames, b.FeatureNames) || a.LabelName != b.LabelName:
		return fmt.Sprintf("names %q %q, want %q %q", b.FeatureNames, b.LabelName, a.FeatureNames, a.LabelName)
	}
	return ""
}
