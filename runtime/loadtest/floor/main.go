// Command floor is the HTTP floor of the load test: a bare net/http server that answers every
// POST with a fixed V2 inference response of the size gangboost-runtime returns for one Iris
// row, so the load test can tell the cost of HTTP (on this machine, under this load generator)
// from the cost of decoding, evaluating and encoding.
//
// With --server_timeouts it runs with the timeouts gangboost-runtime has at its defaults
// (header, body, answer and idle), as net/http's own: net/http then resets the connection's
// deadlines on every request, a cost of HTTP as a server that must bound slow clients pays it
// (gangboost-runtime keeps all but the body's on its listener, runtime/server/deadline.go).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// response is what gangboost-runtime returns for one Iris row (same fields, same length).
const response = `{"model_name":"iris","id":"ef2be2ca0f5876d1","outputs":[{"name":"output-0","shape":[1,3],"datatype":"FP32","data":[0.98885334,0.0071750334,0.0039716284]}]}`

func main() {
	port := flag.Int("port", 8090, "port to listen on (127.0.0.1)")
	timeouts := flag.Bool("server_timeouts", false, "set the deadlines gangboost-runtime sets at its defaults (--request_timeout 60s)")
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
	srv := &http.Server{Handler: mux}
	if *timeouts {
		// server.Run's settings for --request_timeout 60s (plus its 5 s write grace).
		srv.ReadHeaderTimeout, srv.ReadTimeout = 10*time.Second, 60*time.Second
		srv.WriteTimeout, srv.IdleTimeout = 65*time.Second, 2*time.Minute
	}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
