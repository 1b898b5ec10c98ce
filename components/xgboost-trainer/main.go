// Command gangboost-train trains an XGBoost model as one rank of an XGBoostJob, or, with --local N,
// runs a whole gang (a Master and N Workers) as local processes.
//
// Every flag can also come from the environment as GANGBOOST_<FLAG> (upper case, dashes as
// underscores, e.g. GANGBOOST_NUM_ROUND=50); a flag on the command line wins. Distributed settings
// come from the Training Operator (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) or Kubeflow Trainer
// v2 (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER) environment.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/contract/dataschema"
	"github.com/gangboost/gangboost/internal/plumbing/envflag"
	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/gangenv"
	"github.com/gangboost/gangboost/internal/training/gangwatch"
	"github.com/gangboost/gangboost/internal/training/localgang"
	"github.com/gangboost/gangboost/internal/training/train"
	"github.com/gangboost/gangboost/internal/training/trainflags"
	"github.com/gangboost/gangboost/internal/training/xgb"
)

// Exit codes: 1 a failure of this rank, 2 bad usage, 3 another rank of the gang was lost.
const (
	exitFailed = 1
	exitUsage  = 2
	exitLost   = 3
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 1 && (args[0] == "--build-info" || args[0] == "-build-info") {
		return buildInfo()
	}
	f, fs := trainflags.New("gangboost-train")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help asked for the usage; it is not a mistake
		}
		return exitUsage
	}
	// Every flag is checked here, before a local gang starts or any data is read, so a bad value
	// exits 2 at once instead of failing each rank later.
	usage := func(err error) int {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitUsage
	}
	if err := envflag.Fill(fs, envflag.Prefixed("GANGBOOST_"), os.LookupEnv); err != nil {
		return usage(err)
	}
	if err := f.Finish(); err != nil {
		return usage(err)
	}
	if err := checkGPU(f.Params, f.GPUs); err != nil {
		return usage(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if f.MaxMatrixBytes == 0 {
		f.MaxMatrixBytes = defaultMaxMatrix(log, f.Local+1)
	}
	limits := dataset.Limits{MaxLineBytes: int(f.MaxLineBytes), MaxMatrixBytes: int64(f.MaxMatrixBytes)}
	var categories map[string][]string
	if f.DataSchema != "" {
		var err error
		if categories, err = dataschema.ReadCategories(f.DataSchema); err != nil {
			return usage(fmt.Errorf("--data-schema: %w", err))
		}
	}
	job := train.Job{
		Params: f.Params,
		Train: dataset.Spec{Path: f.Train, Format: f.Format, Builtin: f.Dataset, Label: f.Label, Features: f.Features, Limits: limits,
			Categories: categories, ObjectStore: f.ObjectStore, Log: log},
		EvalFraction: f.EvalFraction,
		ModelDir:     f.ModelDir,
		ModelStore:   f.ObjectStore,
		ModelFormat:  f.ModelFormat,
		Producer:     f.Producer,
		Overwrite:    f.Overwrite,
		LogEvery:     f.LogEvery,
		Checkpoint: train.Checkpointing{Dir: f.CheckpointDir, EveryRounds: f.CheckpointEveryRounds,
			EverySeconds: time.Duration(f.CheckpointEverySeconds) * time.Second, Keep: f.CheckpointKeep},
		WatchPort: f.WatchPort,
		Watch:     gangwatch.Options{Timeout: f.GangTimeout, StartTimeout: f.GangStartTimeout},
		Log:       log,
	}
	if f.Eval != "" {
		job.Eval = &dataset.Spec{Path: f.Eval, Format: f.Format, Label: f.Label, Features: f.Features, Limits: limits,
			Categories: categories, ObjectStore: f.ObjectStore, Log: log}
	}
	if err := job.Validate(); err != nil {
		return usage(fmt.Errorf("bad flags: %w", err))
	}
	if f.ModelDir != "" {
		if _, err := job.CheckModelDir(); err != nil {
			return usage(err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.Local > 0 {
		// Each rank gets the share of the machine computed here, not a quarter of it each.
		return runLocal(ctx, f.Local, f.LocalRestarts, append(args, "--max-matrix-bytes", strconv.FormatUint(f.MaxMatrixBytes, 10)))
	}
	cl, err := gangenv.Read(os.Getenv)
	if err != nil {
		log.Error("bad distributed environment", "err", err)
		return exitUsage
	}
	if _, err := train.Run(ctx, job, cl); err != nil {
		log.Error("training failed", "err", err)
		var lost *gangwatch.LostError
		if errors.As(err, &lost) {
			return exitLost
		}
		return exitFailed
	}
	return 0
}

// defaultMaxMatrix is --max-matrix-bytes when not given: a quarter of the memory this process may
// take, split between the ranks that share the machine. A quarter, because the dense matrix is not
// the only copy of the data: while it is built the parsed values exist twice, and libxgboost
// copies it into its own sparse form (8 bytes per present value) and the hist index.
func defaultMaxMatrix(log *slog.Logger, ranksHere int) uint64 {
	avail, err := sysmem.Available()
	if err != nil {
		log.Warn("no bound on the data matrix: cannot tell the memory available; give --max-matrix-bytes", "err", err)
		return 0
	}
	return avail / 4 / uint64(max(ranksHere, 1))
}

// runLocal re-runs this command as a local gang of 1 Master + workers processes, with the
// environment the Training Operator injects into XGBoostJob pods, started again up to restarts
// times after a replica fails.
func runLocal(ctx context.Context, workers, restarts int, args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitFailed
	}
	var rankArgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--local" || a == "-local" || a == "--local-restarts" || a == "-local-restarts":
			i++ // drop its value
		case strings.HasPrefix(a, "--local=") || strings.HasPrefix(a, "-local=") ||
			strings.HasPrefix(a, "--local-restarts=") || strings.HasPrefix(a, "-local-restarts="):
		default:
			rankArgs = append(rankArgs, a)
		}
	}
	env := os.Environ()
	filtered := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GANGBOOST_LOCAL=") && !strings.HasPrefix(kv, "GANGBOOST_LOCAL_RESTARTS=") {
			filtered = append(filtered, kv)
		}
	}
	// One job: the launcher needs exactly its gang's slots.
	l := &localgang.Launcher{Slots: workers + 1}
	job := localgang.Job{
		Name: "gangboost-train", Command: self, Args: rankArgs, Workers: workers,
		Env: filtered, Stdout: os.Stdout, PeerLostExitCode: exitLost,
	}
	if restarts > 0 {
		// The backoff limit counts replica restarts, each restart of the gang restarts them all,
		// and the gang fails once they reach it.
		job.RestartPolicy, job.BackoffLimit = localgang.RestartOnFailure, restarts*(workers+1)+1
	}
	res, err := l.Run(ctx, job)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train: local gang failed:", err)
		return exitFailed
	}
	_ = res
	return 0
}

// buildInfo prints how the linked libxgboost was built (XGBuildInfo, with its version as
// libxgboost_version): launch-xgboostjob reads USE_CUDA to refuse GPU requests a CPU-only build
// would leave unused, and make images records it in the image's labels.
func buildInfo() int {
	info, err := xgb.BuildInfo()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitFailed
	}
	info["libxgboost_version"] = xgb.Version()
	b, err := json.Marshal(info)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitFailed
	}
	fmt.Println(string(b))
	return 0
}

// checkGPU refuses a GPU setting (device=cuda, tree_method=gpu_hist) when the linked libxgboost
// has no CUDA: it would fail inside libxgboost after the gang was scheduled, or train on the CPU
// while the GPUs the gang holds stay idle.
func checkGPU(p trainflags.Params, gpus int) error {
	setting := p.UsesGPU()
	if setting == "" && gpus > 0 {
		// An image other than launch's own, whose build launch could not know: the pods hold
		// the GPUs now, and training on the CPU beside them would hide that until the bill.
		setting = fmt.Sprintf("--gpus %d (the pod holds %d GPU(s))", gpus, gpus)
	}
	if setting == "" {
		return nil
	}
	info, err := xgb.BuildInfo()
	if err != nil {
		return err
	}
	if cuda, _ := info["USE_CUDA"].(bool); !cuda {
		return fmt.Errorf("%s: this gangboost-train links libxgboost %s built without CUDA (XGBuildInfo USE_CUDA false); "+
			"train on the CPU (gpus 0, device cpu, tree_method hist) or use a trainer image built with a CUDA libxgboost", setting, xgb.Version())
	}
	return nil
}
