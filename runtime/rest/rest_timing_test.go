package rest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gangboost/gangboost/runtime/loadtest"
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

// discardWriter is the response side of a request as a handler sees it from net/http, minus
// the writing: a new header map for each request, the status and body dropped.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header  { return w.h }
func (w *discardWriter) WriteHeader(code int) { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK // as net/http: a write before WriteHeader answers 200
	}
	return len(b), nil
}

// BenchmarkServeHTTP times what the server does for a one-row request between net/http's read
// of it and net/http's write of the answer: routing, the request id, the body read, decode ->
// evaluate -> encode, the answer's headers, metrics and the request log's check; from every
// core at once (-cpu 1,2 shows what cores cost each other). Unlike BenchmarkInfer, each
// goroutine reuses its request and body reader, so the allocations are the handler's own (the
// answer's header map, as net/http makes one per request, is counted).
// BenchmarkExchangeServe/json-1row beside it is decode -> evaluate -> encode alone.
func BenchmarkServeHTTP(b *testing.B) {
	benchServeHTTP(b, newHandler(b, false))
}

// BenchmarkServeHTTPFloor is BenchmarkServeHTTP of the load test's HTTP floor's handler
// (loadtest.FloorInfer: it reads the body and answers a fixed body of the runtime's answer's
// length with its two headers): the part of a request's handler CPU any server pays, so the
// difference between the two is the runtime's own, on the machine at hand.
func BenchmarkServeHTTPFloor(b *testing.B) {
	benchServeHTTP(b, loadtest.FloorInfer())
}

func benchServeHTTP(b *testing.B, h http.Handler) {
	body := rowsJSON(1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rd := bytes.NewReader(body)
		r := httptest.NewRequest("POST", "/v2/models/iris/infer", nil)
		r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
		w := new(discardWriter)
		for pb.Next() {
			rd.Reset(body)
			w.h, w.code = make(http.Header), 0
			if h.ServeHTTP(w, r); w.code != http.StatusOK {
				b.Errorf("status %d", w.code)
				return
			}
		}
	})
}
