package v2

import "testing"

func BenchmarkParseInferRequest(b *testing.B) {
	body := []byte(parseSeeds[0])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ok := parseFast(new(InferRequest), body); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("fast-reused", func(b *testing.B) {
		b.ReportAllocs()
		var req InferRequest
		for i := 0; i < b.N; i++ {
			if err := ParseInferRequestInto(&req, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := parseStd(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
