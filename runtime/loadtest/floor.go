package loadtest

import (
	"io"
	"net/http"
	"strconv"
)

// floorAnswer is what gangboost-runtime returns for one Iris row (same fields, same length).
const floorAnswer = `{"model_name":"iris","id":"ef2be2ca0f5876d1","outputs":[{"name":"output-0","shape":[1,3],"datatype":"FP32","data":[0.98885334,0.0071750334,0.0039716284]}]}`

// FloorInfer is the HTTP floor's answer to an inference request (the floor program's, and
// runtime/rest's BenchmarkServeHTTPFloor's): the request read as a real server must, so
// keep-alive connections stay usable, then a fixed V2 answer of the runtime's length with the
// runtime's two headers, and no decoding, evaluation or encoding.
func FloorInfer() http.HandlerFunc {
	body := []byte(floorAnswer)
	contentLength := strconv.Itoa(len(body))
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", contentLength)
		_, _ = w.Write(body)
	}
}
