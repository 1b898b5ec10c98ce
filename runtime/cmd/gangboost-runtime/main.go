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
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/envflag"
	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/server"
)

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
		timeout      = fs.Duration("request_timeout", 60*time.Second, "longest time to receive a request (408 after it); its answer must be written within "+server.WriteGrace.String()+" more")
		batchSize    = fs.Int("max_batch_size", 64, "rows a merged batch collects before it runs")
		batchDelay   = fs.Duration("max_batch_delay", time.Millisecond, "longest a batch gathers requests already on their way (none waits for requests not yet sent)")
		drain        = fs.Duration("shutdown_timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
		logLevel     = fs.String("log_level", "info", "debug, info, warn or error")
		check        = fs.Bool("check", false, "load the models in --model_dir as serving would, print each one's file and exit, 1 with the reason when one does not load; opens no port (a pre-flight for a model folder, e.g. make deploy-example's)")
		pprofPort    = fs.Int("pprof_port", 0, "serve Go's pprof profiles (net/http/pprof) on 127.0.0.1 at this port, for profiling a load run (make load-profile); 0: off")
		exitOnFail   = fs.Bool("exit_on_load_failure", false, "exit 1 when a model fails to load at start, instead of staying up live but not ready; under KServe the failure then reaches the InferenceService's status.modelStatus.lastFailureInfo (with terminationMessagePolicy FallbackToLogsOnError) and the pod restarts with back-off")
	)
	batching := batchingOff
	fs.Var(&batching, "enable_batching", "merge concurrent requests into shared evaluations: true, false, or auto (only a model whose one-row evaluation takes "+autoMinRowCost.String()+" or more: one of about 1000 trees of depth 8)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := envflag.Fill(fs, envflag.Upper, os.LookupEnv); err != nil {
		return err
	}
	if *check {
		return checkModels(os.Stdout, *modelDir, *modelName, *modelVersion)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log_level %q: %w", *logLevel, err)
	}
	cfg := server.Config{
		ModelName: *modelName, ModelDir: *modelDir, ModelVersion: *modelVersion,
		HTTPAddr:     ":" + strconv.Itoa(*httpPort),
		Limits:       infer.Limits{MaxRows: *maxRows, MaxResponseValues: *maxValues, MaxContribsRows: *maxContribs},
		MaxBodyBytes: *maxBody, MaxInflightBodyBytes: *maxInflight, RequestTimeout: *timeout,
		ShutdownTimeout: *drain, ExitOnLoadFailure: *exitOnFail,
		Log: slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if *grpcPort > 0 {
		cfg.GRPCAddr = ":" + strconv.Itoa(*grpcPort)
	}
	if batching != batchingOff {
		cfg.Batching = batcher.Options{MaxBatchRows: *batchSize, MaxDelay: *batchDelay}
		if batching == batchingAuto {
			cfg.Batching.MinRowCost = autoMinRowCost
		}
	}
	s, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	if *pprofPort > 0 {
		if err := servePprof(*pprofPort); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return s.Run(ctx)
}

// servePprof serves the pprof handlers on loopback only: profiles show request contents and
// cost CPU, so they are never on the serving ports.
func servePprof(port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("--pprof_port %d: %w", port, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}

// checkModels loads the models of dir as the server would (the same discovery, parsing and
// metadata checks) and prints each one's file; the first that does not load is the error.
func checkModels(w io.Writer, dir, name, version string) error {
	r, err := registry.Open(dir, name, version, registry.Options{})
	if err != nil {
		return err
	}
	for _, n := range r.Names() {
		m, err := r.Get(n, "")
		if err != nil {
			return err
		}
		if ok, err := m.Ready(); !ok {
			return fmt.Errorf("model_dir %s: %w", dir, err)
		}
		fmt.Fprintf(w, "model %s: %s loads\n", n, m.Status().File)
	}
	return nil
}

// batchingMode is --enable_batching: a boolean flag (given alone, true) that also takes auto.
type batchingMode string

const (
	batchingOff  batchingMode = "false"
	batchingOn   batchingMode = "true"
	batchingAuto batchingMode = "auto"
)

// autoMinRowCost is where --enable_batching=auto turns batching on: measured on the 2-core VM
// (2026-11-29, make load-test-batching), batching paid from models of about 1000 trees of depth
// 8, whose one-row evaluation service.RowCost times at 7.0-8.9 µs (500 trees, the break-even:
// 2.9-3.6 µs; 100 trees, which batching slows by a fifth: 0.5 µs).
const autoMinRowCost = 5 * time.Microsecond

func (b *batchingMode) String() string { return string(*b) }

func (b *batchingMode) Set(v string) error {
	switch strings.ToLower(v) {
	case "true", "1", "t", "on":
		*b = batchingOn
	case "false", "0", "f", "off":
		*b = batchingOff
	case "auto":
		*b = batchingAuto
	default:
		return fmt.Errorf("%q: want true, false or auto", v)
	}
	return nil
}

// IsBoolFlag lets --enable_batching stand alone, as the boolean flag it was.
func (b *batchingMode) IsBoolFlag() bool { return true }
