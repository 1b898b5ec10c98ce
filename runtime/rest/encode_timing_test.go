package rest

import (
	"testing"

	"github.com/gangboost/gangboost/runtime/infer"
)

func BenchmarkEncodeResponse(b *testing.B) {
	outs := []infer.Output{{Name: "output-0", Shape: []int64{1, 3}, Datatype: "FP32", Values: []float32{0.0052, 0.0311, 0.9637}}}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = appendResponse(nil, "iris", "1", "0123456789abcdef", outs)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = marshalResponse("iris", "1", "0123456789abcdef", outs)
		}
	})
}
