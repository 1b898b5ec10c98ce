// Package server is the runtime process's life: it listens on the REST and gRPC ports before the
// models load (so probes get answers: live, not ready), loads them while serving, and on
// shutdown drains in-flight requests for a bounded time before cancelling what still runs.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/grpcserver"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/rest"
	"github.com/gangboost/gangboost/runtime/service"
)

// WriteGrace is how much longer than the request timeout the answer to a request may take to
// write, so that a request whose body timed out still gets its 408.
const WriteGrace = 5 * time.Second

// Config is what the runtime serves, where, and within which limits.
type Config struct {
	// ModelName, ModelDir and ModelVersion are KServe's --model_name, --model_dir and
	// --model_version: a model folder, or a repository of them.
	ModelName, ModelDir, ModelVersion string
	// HTTPAddr and GRPCAddr are the listen addresses (":8080"); an empty GRPCAddr serves no gRPC.
	HTTPAddr, GRPCAddr string
	// Limits bound what one request may ask.
	Limits infer.Limits
	// MaxBodyBytes is the largest request body (and gRPC message) accepted.
	MaxBodyBytes int64
	// MaxInflightBodyBytes bounds the request bodies held at once (0: no limit).
	MaxInflightBodyBytes int64
	// RequestTimeout is the longest time to receive a request; its answer has WriteGrace more.
	RequestTimeout time.Duration
	// Batching merges concurrent requests when MaxBatchRows is set.
	Batching batcher.Options
	// ShutdownTimeout is how long a shutdown waits for in-flight requests.
	ShutdownTimeout time.Duration
	// ExitOnLoadFailure makes Run return when a model fails to load at start, instead of
	// staying up live but not ready.
	ExitOnLoadFailure bool
	Log               *slog.Logger
}

// Server is a runtime listening on its ports, its models discovered but not yet loaded.
type Server struct {
	cfg      Config
	log      *slog.Logger
	httpLn   *deadlineListener
	grpcLn   net.Listener
	registry *registry.Registry
	metrics  *metrics.Metrics
}

// Listen binds the ports and discovers the models in cfg.ModelDir.
func Listen(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Log, metrics: metrics.New()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on REST port %s: %w", port(cfg.HTTPAddr), err)
	}
	t := restTimeouts(cfg)
	s.httpLn = newDeadlineListener(httpLn, sweepTick(t.readHeader, t.read, t.write, t.idle), t)
	if cfg.GRPCAddr != "" {
		if s.grpcLn, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
			s.httpLn.Close()
			return nil, fmt.Errorf("listen on gRPC port %s: %w", port(cfg.GRPCAddr), err)
		}
	}
	batching := cfg.Batching
	if batching.MaxBatchRows > 0 && batching.Log == nil {
		batching.Log = s.log
	}
	s.registry, err = registry.Discover(cfg.ModelDir, cfg.ModelName, cfg.ModelVersion, registry.Options{
		NewPredictor: service.NewPredictor(s.metrics, batching),
		OnLoad: func(model, file string, err error) {
			s.metrics.ObserveLoad(model, err)
			if err != nil {
				s.log.Error("model load failed", "model", model, "file", file, "error", err.Error())
			} else {
				s.log.Info("model loaded", "model", model, "file", file)
			}
		},
	})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// timeouts are the REST connections' deadlines.
type timeouts struct{ readHeader, read, write, idle time.Duration }

func restTimeouts(cfg Config) timeouts {
	return timeouts{
		readHeader: min(cfg.RequestTimeout, 10*time.Second),
		read:       cfg.RequestTimeout,
		write:      cfg.RequestTimeout + WriteGrace,
		idle:       2 * time.Minute,
	}
}

func port(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return addr
}

func (s *Server) close() {
	s.httpLn.Close()
	if s.grpcLn != nil {
		s.grpcLn.Close()
	}
}

// HTTPAddr is the REST listener's address.
func (s *Server) HTTPAddr() net.Addr { return s.httpLn.Addr() }

// GRPCAddr is the gRPC listener's address; nil without gRPC.
func (s *Server) GRPCAddr() net.Addr {
	if s.grpcLn == nil {
		return nil
	}
	return s.grpcLn.Addr()
}

// Run serves, loads the models, and serves until ctx ends (then it drains and returns nil), a
// server fails, or, with ExitOnLoadFailure, a model fails to load at start.
func (s *Server) Run(ctx context.Context) error {
	start := time.Now()
	cfg := s.cfg
	svc := &service.Service{Registry: s.registry, Metrics: s.metrics, Limits: cfg.Limits,
		EvalTimeout: cfg.RequestTimeout + WriteGrace}
	e := rest.New(svc, rest.Options{MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout,
		MaxInflightBodyBytes: cfg.MaxInflightBodyBytes}, s.log)
	// Deadlines on the connection rather than http.TimeoutHandler, which costs a goroutine and a
	// buffered copy of every response (a third of the single-row throughput); coarse ones (the
	// listener's, deadline.go), which cost no timer a request. A body that does not arrive
	// within the timeout gets 408 while the write deadline still allows the answer; evaluation
	// observes the request's context, bounded by the write deadline, and the base context,
	// which a shutdown cancels once its drain time is over.
	baseCtx, cancelInflight := context.WithCancel(context.Background())
	defer cancelInflight()
	httpSrv := s.httpLn.httpServer(e)
	httpSrv.BaseContext = func(net.Listener) context.Context { return baseCtx }
	// One error each from the two servers and the start-up load.
	errc := make(chan error, 3)
	go func() { errc <- httpSrv.Serve(s.httpLn) }()
	var gs *grpcserver.Server
	grpcPort := 0
	if s.grpcLn != nil {
		gs = grpcserver.New(svc, grpcserver.Options{MaxMessageBytes: int(cfg.MaxBodyBytes)}, s.log)
		go func() { errc <- gs.Serve(s.grpcLn) }()
		grpcPort = s.grpcLn.Addr().(*net.TCPAddr).Port
	}
	s.log.Info("serving", "http_port", s.httpLn.Addr().(*net.TCPAddr).Port, "grpc_port", grpcPort,
		"batching", batchingMode(cfg.Batching), "models", s.registry.Names())

	// Load while serving: live answers at once, ready once the models are in.
	go func() {
		s.registry.LoadAll()
		if ok, why := s.registry.Ready(); ok {
			s.log.Info("ready", "models", s.registry.Names(), "model_dir", cfg.ModelDir, "startup_ms", time.Since(start).Milliseconds())
		} else {
			// Stay up, live but not ready, so the reason shows in probes and logs; or exit with
			// it, for platforms that report a container's failure but not its readiness body.
			s.log.Error("not ready", "models", s.registry.Names(), "model_dir", cfg.ModelDir, "reason", fmt.Sprint(why))
			if cfg.ExitOnLoadFailure {
				errc <- fmt.Errorf("model load failed at start (--exit_on_load_failure): %v", why)
			}
		}
	}()

	select {
	case err := <-errc:
		stopNow(httpSrv, gs)
		// A load that fails at once can come before Serve has taken its listener, which
		// http.Server.Close then does not close (Serve does, later, in its own goroutine): close
		// them here, so the ports refuse connections once Run has returned.
		s.close()
		return err
	case <-ctx.Done():
	}
	return s.drain(httpSrv, gs, cancelInflight)
}

// batchingMode is --enable_batching as the server applies it: off, on (every model), or auto
// (each model as its evaluation cost decides at load; its metadata's "batching" parameter and
// the load's log line say which).
func batchingMode(o batcher.Options) string {
	switch {
	case o.MaxBatchRows <= 0:
		return "off"
	case o.MinRowCost > 0:
		return "auto"
	}
	return "on"
}

// stopNow closes both servers without draining: Run is returning an error.
func stopNow(httpSrv *http.Server, gs *grpcserver.Server) {
	_ = httpSrv.Close()
	if gs != nil {
		gs.Stop()
	}
}

// drain stops accepting, waits up to ShutdownTimeout for in-flight requests, then cancels the
// evaluations still running and gives their handlers a moment to answer.
func (s *Server) drain(httpSrv *http.Server, gs *grpcserver.Server, cancelInflight context.CancelFunc) error {
	timeout := s.cfg.ShutdownTimeout
	s.log.Info("shutting down: draining in-flight requests", "timeout", timeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	grpcDone := make(chan struct{})
	if gs != nil {
		go func() { gs.GracefulStop(); close(grpcDone) }()
	} else {
		close(grpcDone)
	}
	err := httpSrv.Shutdown(sctx)
	select {
	case <-grpcDone:
	case <-sctx.Done():
	}
	if sctx.Err() == nil && (err == nil || errors.Is(err, http.ErrServerClosed)) {
		s.log.Info("stopped")
		return nil
	}
	// The drain time is over: stop the evaluations still running rather than let them hold the
	// process, give their handlers a moment to answer, and exit.
	s.log.Warn("drain timed out: cancelling in-flight requests", "timeout", timeout.String())
	cancelInflight()
	if gs != nil {
		gs.Stop()
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer fcancel()
	if err := httpSrv.Shutdown(fctx); err != nil {
		_ = httpSrv.Close()
	}
	s.log.Info("stopped")
	return nil
}
