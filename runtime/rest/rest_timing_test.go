package rest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

func benchInfer(b *testing.B, h http.Handler, body []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/v2/models/iris/infer", bytes.NewReader(body)))
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkInfer times the whole REST infer path in-process: decode, evaluate, encode.
func BenchmarkInfer(b *testing.B) {
	h := newHandler(b, false)
	b.Run("json-1row", func(b *testing.B) { benchInfer(b, h, rowsJSON(1)) })
	b.Run("json-1000rows", func(b *testing.B) { benchInfer(b, h, rowsJSON(1000)) })
}
