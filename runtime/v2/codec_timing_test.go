package v2

import (
	"strings"
	"testing"
)

// BenchmarkDecodeJSONData times reading a JSON tensor into float32 rows: one iris row, and
// 1000 of them as a nested array.
func BenchmarkDecodeJSONData(b *testing.B) {
	one := []byte("[5.1,3.5,1.4,0.2]")
	many := []byte("[" + strings.Repeat("[5.1,3.5,1.4,0.2],", 999) + "[6.7,3.0,5.2,2.3]]")
	for _, c := range []struct {
		name  string
		raw   []byte
		shape []int64
	}{{"row", one, []int64{1, 4}}, {"rows1000", many, []int64{1000, 4}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.raw)))
			want := int(c.shape[0] * c.shape[1])
			dst := make([]float32, 0, want)
			for b.Loop() {
				var err error
				if dst, err = decodeJSON(dst[:0], "x", "FP32", c.raw, want, c.shape); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
