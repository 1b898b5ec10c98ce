// Command gangboost-runtime is a KServe model server for XGBoost models: V2 / Open Inference
// Protocol over REST and gRPC, V1 over REST, started as KServe starts runtimes
// (--model_name, --model_dir, --http_port, --grpc_port).
//
// Every flag can also be set from the environment with its upper-case name (MODEL_NAME,
// MODEL_DIR, HTTP_PORT, GRPC_PORT, ...); a flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/gangboost/gangboost/internal/plumbing/envflag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/grpcserver"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/rest"
	"github.com/gangboost/gangboost/runtime/service"
)

// writeGrace is how much longer than --request_timeout the answer to a request may take to write,
// so that a request whose body timed out still gets its 408.
const writeGrace = 5 * time.Second

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // --help printed the usage
		}
		fmt.Fprintln(os.Stderr, "gangboost-runtime:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gangboost-runtime", flag.ContinueOnError)
	var (
		modelName    = fs.String("model_name", "model", "name the model is served under (the InferenceService name)")
		modelDir     = fs.String("model_dir", "/mnt/models", "folder with model.json or model.ubj (+ metadata.json), or a repository of such folders")
		modelVersion = fs.String("model_version", "", "version the model is served as (optional)")
		httpPort     = fs.Int("http_port", 8080, "REST port")
		grpcPort     = fs.Int("grpc_port", 8081, "gRPC port (0: off)")
		maxBody      = fs.Int64("max_body_bytes", 64<<20, "largest request body accepted")
		maxRows      = fs.Int("max_batch_rows", 100000, "most rows one request may hold")
		maxValues    = fs.Int("max_response_values", 16<<20, "most values one answer may hold: rows x values per row, over every requested output (413 beyond)")
		maxContribs  = fs.Int("max_contribs_rows", 1000, "most rows of a request that asks for SHAP values (contribs), which cost trees x depth^2 per row")
		maxInflight  = fs.Int64("max_inflight_body_bytes", 256<<20, "request bodies held in memory at once over all requests; a request beyond it gets 503 (0: no limit)")
		timeout      = fs.Duration("request_timeout", 60*time.Second, "longest time to receive a request (408 after it); its answer must be written within "+writeGrace.String()+" more")
		batchOn      = fs.Bool("enable_batching", false, "merge concurrent requests into shared evaluations")
		batchSize    = fs.Int("max_batch_size", 64, "rows a merged batch collects before it runs")
		batchDelay   = fs.Duration("max_batch_delay", time.Millisecond, "longest a request waits for others to join its batch")
		drain        = fs.Duration("shutdown_timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
		logLevel     = fs.String("log_level", "info", "debug, info, warn or error")
		exitOnFail   = fs.Bool("exit_on_load_failure", false, "exit 1 when a model fails to load at start, instead of staying up live but not ready; under KServe the failure then reaches the InferenceService's status.modelStatus.lastFailureInfo (with terminationMessagePolicy FallbackToLogsOnError) and the pod restarts with back-off")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := envflag.Fill(fs, envflag.Upper, os.LookupEnv); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log_level %q: %w", *logLevel, err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	start := time.Now()
	// Listen and serve before loading so probes get answers (live, not ready) while the
	// models load.
	httpLn, err := net.Listen("tcp", ":"+strconv.Itoa(*httpPort))
	if err != nil {
		return fmt.Errorf("listen on REST port %d: %w", *httpPort, err)
	}
	var grpcLn net.Listener
	if *grpcPort > 0 {
		if grpcLn, err = net.Listen("tcp", ":"+strconv.Itoa(*grpcPort)); err != nil {
			return fmt.Errorf("listen on gRPC port %d: %w", *grpcPort, err)
		}
	}

	m := metrics.New()
	var batching batcher.Options
	if *batchOn {
		batching = batcher.Options{MaxBatchRows: *batchSize, MaxDelay: *batchDelay, Log: log}
	}
	reg, err := registry.Discover(*modelDir, *modelName, *modelVersion, registry.Options{
		NewPredictor: service.NewPredictor(m, batching),
		OnLoad: func(model, file string, err error) {
			m.ObserveLoad(model, err)
			if err != nil {
				log.Error("model load failed", "model", model, "file", file, "error", err.Error())
			} else {
				log.Info("model loaded", "model", model, "file", file)
			}
		},
	})
	if err != nil {
		return err
	}
	svc := &service.Service{Registry: reg, Metrics: m, Limits: infer.Limits{
		MaxRows: *maxRows, MaxResponseValues: *maxValues, MaxContribsRows: *maxContribs,
	}}

	e := rest.New(svc, rest.Options{MaxBodyBytes: *maxBody, RequestTimeout: *timeout, EvalTimeout: *timeout + writeGrace,
		MaxInflightBodyBytes: *maxInflight}, log)
	// Deadlines on the connection rather than http.TimeoutHandler, which costs a goroutine and a
	// buffered copy of every response (a third of the single-row throughput). A body that does
	// not arrive within the timeout gets 408 while the write deadline still allows the answer;
	// evaluation observes the request's context, bounded by the write deadline, and the base
	// context, which a shutdown cancels once its drain time is over.
	baseCtx, cancelInflight := context.WithCancel(context.Background())
	defer cancelInflight()
	httpSrv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		Handler:           e,
		ReadHeaderTimeout: min(*timeout, 10*time.Second),
		ReadTimeout:       *timeout,
		WriteTimeout:      *timeout + writeGrace,
		IdleTimeout:       2 * time.Minute,
	}
	// One error each from the two servers and the start-up load.
	errc := make(chan error, 3)
	go func() { errc <- httpSrv.Serve(httpLn) }()
	var gs *grpcserver.Server
	if grpcLn != nil {
		g := grpcserver.New(svc, grpcserver.Options{MaxMessageBytes: int(*maxBody), EvalTimeout: *timeout + writeGrace}, log)
		gs = g
		go func() { errc <- g.Serve(grpcLn) }()
	}
	log.Info("serving", "http_port", *httpPort, "grpc_port", *grpcPort, "batching", *batchOn, "models", reg.Names())

	// Load while serving: live answers at once, ready once the models are in.
	go func() {
		reg.LoadAll()
		if ok, why := reg.Ready(); ok {
			log.Info("ready", "models", reg.Names(), "model_dir", *modelDir, "startup_ms", time.Since(start).Milliseconds())
		} else {
			// Stay up, live but not ready, so the reason shows in probes and logs; or exit with
			// it, for platforms that report a container's failure but not its readiness body.
			log.Error("not ready", "models", reg.Names(), "model_dir", *modelDir, "reason", fmt.Sprint(why))
			if *exitOnFail {
				errc <- fmt.Errorf("model load failed at start (--exit_on_load_failure): %v", why)
			}
		}
	}()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", "timeout", drain.String())
	sctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	grpcDone := make(chan struct{})
	if gs != nil {
		go func() { gs.GracefulStop(); close(grpcDone) }()
	} else {
		close(grpcDone)
	}
	err = httpSrv.Shutdown(sctx)
	select {
	case <-grpcDone:
	case <-sctx.Done():
	}
	if sctx.Err() == nil && (err == nil || errors.Is(err, http.ErrServerClosed)) {
		log.Info("stopped")
		return nil
	}
	// The drain time is over: stop the evaluations still running rather than let them hold the
	// process, give their handlers a moment to answer, and exit.
	log.Warn("drain timed out: cancelling in-flight requests", "timeout", drain.String())
	cancelInflight()
	if gs != nil {
		gs.Stop()
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer fcancel()
	if err := httpSrv.Shutdown(fctx); err != nil {
		_ = httpSrv.Close()
	}
	log.Info("stopped")
	return nil
}
