package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

// progressLog collects progress lines and signals each one.
type progressLog struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newProgressLog() *progressLog { return &progressLog{added: make(chan struct{}, 100)} }

func (p *progressLog) add(line string) {
	p.mu.Lock()
	p.lines = append(p.lines, line)
	p.mu.Unlock()
	select {
	case p.added <- struct{}{}:
	default:
	}
}

func (p *progressLog) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitFor blocks until a line holds sub (the test's own deadline guards a hang).
func (p *progressLog) waitFor(t *testing.T, sub string) {
	t.Helper()
	guard := time.After(2 * time.Minute)
	for !strings.Contains(p.String(), sub) {
		select {
		case <-p.added:
		case <-guard:
			t.Fatalf("no progress line with %q:\n%s", sub, p)
		}
	}
}

// freeAddr is a loopback address nobody listens on (yet), on a port outside the ephemeral range,
// so that no outgoing connection takes it before the test listens there or finds it refusing.
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// The Service refuses connections for a moment after the InferenceService is Ready: the check
// says so, keeps asking, and returns once the model answers ready at that address, as V2 REST.
func TestWaitAnswersREST(t *testing.T) {
	for _, tc := range []struct{ protocol, path string }{
		{"v2", "/v2/models/iris/ready"},
		{"v1", "/v1/models/iris"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			addr := freeAddr(t)
			s := irisService()
			s.ProtocolVersion = tc.protocol
			ep := &deploy.Endpoint{URL: "http://" + addr, ModelName: "iris"}
			log := newProgressLog()
			done := make(chan error, 1)
			go func() { done <- (&Backend{}).waitAnswers(context.Background(), s, ep, log.add) }()
			log.waitFor(t, "connection refused")

			// The endpoint comes up, at first without the model ready.
			var mu sync.Mutex
			ready := false
			var paths []string
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				paths = append(paths, r.Method+" "+r.URL.Path)
				if !ready {
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"error":"model iris is not ready: loading"}`)
					ready = true
					return
				}
				fmt.Fprint(w, `{}`)
			})}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("waitAnswers: %v\n%s", err, log)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("waitAnswers still waiting on an endpoint that answers:\n%s", log)
			}
			for _, want := range []string{
				"GET http://" + addr + tc.path + ": not answering yet: ",
				"503 Service Unavailable: {\"error\":\"model iris is not ready: loading\"}",
				"GET http://" + addr + tc.path + ": the model answers ready",
			} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("progress lacks %q:\n%s", want, log)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range paths {
				if p != "GET "+tc.path {
					t.Errorf("called %s, want only GET %s", p, tc.path)
				}
			}
		})
	}
}

// What answered the first call (a Service's ClusterIP before kube-proxy's rules for it were in:
// the host's default route, an egress proxy answering 404) keeps answering on that connection;
// the model answers on any new one. The check opens a connection per call, so it reaches the
// model instead of asking the first answerer until its deadline.
func TestWaitAnswersNewConnectionEachCall(t *testing.T) {
	var mu sync.Mutex
	first := "" // the first connection's remote address
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if first == "" {
			first = r.RemoteAddr
		}
		if r.RemoteAddr == first {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	ep := &deploy.Endpoint{URL: "http://" + ln.Addr().String(), ModelName: "iris"}
	log := newProgressLog()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := (&Backend{}).waitAnswers(ctx, irisService(), ep, log.add); err != nil {
		t.Fatalf("waitAnswers kept asking the first connection's answerer: %v\n%s", err, log)
	}
	if !strings.Contains(log.String(), "not answering yet: 404 Not Found") {
		t.Errorf("progress lacks the first call's 404:\n%s", log)
	}
}

// An endpoint that never answers fails the wait when its context ends, naming the call and the
// last answer.
func TestWaitAnswersDeadline(t *testing.T) {
	addr := freeAddr(t)
	ep := &deploy.Endpoint{URL: "http://" + addr, ModelName: "iris"}
	log := newProgressLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Backend{}).waitAnswers(ctx, irisService(), ep, log.add) }()
	log.waitFor(t, "connection refused")
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "Ready, but GET http://"+addr+"/v2/models/iris/ready did not answer ready") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error = %v, want the call and the refusal", err)
	}
}

// modelReadyServer answers gRPC ModelReady: not ready at first, then ready.
type modelReadyServer struct {
	inference.UnimplementedGRPCInferenceServiceServer
	mu    sync.Mutex
	calls []string
}

func (m *modelReadyServer) ModelReady(_ context.Context, r *inference.ModelReadyRequest) (*inference.ModelReadyResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, r.GetName())
	return &inference.ModelReadyResponse{Ready: len(m.calls) > 1}, nil
}

// A grpc-v2 service is checked with gRPC ModelReady at its gRPC address.
func TestWaitAnswersGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	m := &modelReadyServer{}
	inference.RegisterGRPCInferenceServiceServer(srv, m)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	s := irisService()
	s.ProtocolVersion = "grpc-v2"
	ep := &deploy.Endpoint{URL: "http://unused.invalid", GRPCAddress: ln.Addr().String(), ModelName: "iris"}
	log := newProgressLog()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := (&Backend{}).waitAnswers(ctx, s, ep, log.add); err != nil {
		t.Fatalf("waitAnswers: %v\n%s", err, log)
	}
	want := fmt.Sprintf("gRPC ModelReady \"iris\" at %s", ln.Addr())
	if !strings.Contains(log.String(), want+": not answering yet: ready: false") || !strings.Contains(log.String(), want+": the model answers ready") {
		t.Errorf("progress:\n%s", log)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.calls {
		if c != "iris" {
			t.Errorf("ModelReady for %q, want iris", c)
		}
	}

	// Without a gRPC port on the Service there is nothing to call.
	ep.GRPCAddress = ""
	if err := (&Backend{}).waitAnswers(ctx, s, ep, log.add); err == nil || !strings.Contains(err.Error(), "no gRPC port") {
		t.Errorf("no gRPC address: %v", err)
	}
}
