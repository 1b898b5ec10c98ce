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

	"github.com/gangboost/gangboost/runtime/loadtest"
)

func main() {
	port := flag.Int("port", 8090, "port to listen on (127.0.0.1)")
	timeouts := flag.Bool("server_timeouts", false, "set the deadlines gangboost-runtime sets at its defaults (--request_timeout 60s)")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ready":true}`)
	})
	mux.Handle("POST /", loadtest.FloorInfer())
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
