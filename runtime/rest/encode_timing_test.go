package rest

import (
	"strconv"
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

// BenchmarkAppendFloat32 formats the three probabilities of a one-row Iris answer.
func BenchmarkAppendFloat32(b *testing.B) {
	probs := []float32{0.98885334, 0.0071750334, 0.0039716284}
	buf := make([]byte, 0, 64)
	b.Run("gangboost", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, p := range probs {
				buf = appendFloat32(buf[:0], p)
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, p := range probs {
				buf = strconv.AppendFloat(buf[:0], float64(p), 'f', -1, 32)
			}
		}
	})
}
