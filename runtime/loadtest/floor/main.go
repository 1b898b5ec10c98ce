// Command floor is the HTTP floor of the load test: a bare net/http server that answers every
// POST with a fixed V2 inference response of the size gangboost-runtime returns for one Iris
// row, so the load test can tell the cost of HTTP (on this machine, under this load generator)
// from the cost of decoding, evaluating and encoding.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
)

// response is what gangboost-runtime returns for one Iris row (same fields, same length).
const response = `{"model_name":"iris","id":"ef2be2ca0f5876d1","outputs":[{"name":"output-0","shape":[1,3],"datatype":"FP32","data":[0.98885334,0.0071750334,0.0039716284]}]}`

func main() {
	port := flag.Int("port", 8090, "port to listen on (127.0.0.1)")
	flag.Parse()

	body := []byte(response)
	contentLength := strconv.Itoa(len(body))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ready":true}`)
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		// Read the request as a real server must, so keep-alive connections stay usable.
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", contentLength)
		_, _ = w.Write(body)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
