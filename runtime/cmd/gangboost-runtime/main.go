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
	"syscall"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/cmdline"
	"github.com/gangboost/gangboost/runtime/heapgoal"
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
	v, err := cmdline.Parse(args, os.LookupEnv, os.Stderr)
	if err != nil {
		return err
	}
	if v.Check {
		return checkModels(os.Stdout, v.ModelDir, v.ModelName, v.ModelVersion)
	}
	defer heapgoal.Keep(uint64(v.GCMinHeapMiB) << 20).Stop()
	cfg := server.Config{
		ModelName: v.ModelName, ModelDir: v.ModelDir, ModelVersion: v.ModelVersion,
		HTTPAddr:     ":" + strconv.Itoa(v.HTTPPort),
		Limits:       infer.Limits{MaxRows: v.MaxBatchRows, MaxResponseValues: v.MaxResponseValues, MaxContribsRows: v.MaxContribsRows},
		MaxBodyBytes: v.MaxBodyBytes, MaxInflightBodyBytes: v.MaxInflightBodyBytes, RequestTimeout: v.RequestTimeout,
		ShutdownTimeout: v.ShutdownTimeout, ExitOnLoadFailure: v.ExitOnLoadFailure,
		Log: slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: v.LogLevel})),
	}
	if v.GRPCPort > 0 {
		cfg.GRPCAddr = ":" + strconv.Itoa(v.GRPCPort)
	}
	if v.Batching != cmdline.BatchingOff {
		cfg.Batching = batcher.Options{MaxBatchRows: v.MaxBatchSize, MaxDelay: v.MaxBatchDelay}
		if v.Batching == cmdline.BatchingAuto {
			cfg.Batching.MinRowCost = cmdline.AutoMinRowCost
		}
	}
	s, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	if v.PprofPort > 0 {
		if err := servePprof(v.PprofPort); err != nil {
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
