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
	"errors"
	"flag"
	"fmt"
	"github.com/gangboost/gangboost/internal/plumbing/envflag"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/gangenv"
	"github.com/gangboost/gangboost/internal/training/gangwatch"
	"github.com/gangboost/gangboost/internal/training/localgang"
	"github.com/gangboost/gangboost/internal/training/train"
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

// byteSize is a flag holding a number of bytes, given as e.g. 16MiB, 8GiB or 1048576.
type byteSize uint64

func (b *byteSize) String() string {
	if *b == 0 {
		return "0"
	}
	return strings.ReplaceAll(sysmem.FormatBytes(uint64(*b)), " ", "")
}
func (b *byteSize) Set(v string) error {
	n, err := sysmem.ParseBytes(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func run(args []string) int {
	fs := flag.NewFlagSet("gangboost-train", flag.ContinueOnError)
	p := train.DefaultParams()
	var (
		trainPath, evalPath, builtin, format, label, modelDir, modelFormat string
		features, evalMetric, extra                                        stringList
		evalFraction                                                       float64
		logEvery, local, watchPort                                         int
		watchTimeout, startTimeout                                         time.Duration
		maxLine                                                            = byteSize(dataset.DefaultMaxLineBytes)
		maxMatrix                                                          byteSize
	)
	fs.StringVar(&trainPath, "train", "", "training data: a CSV file with a header, or a LibSVM file")
	fs.StringVar(&evalPath, "eval", "", "evaluation data (same format as --train)")
	fs.StringVar(&builtin, "dataset", "", "built-in data set instead of --train: iris")
	fs.StringVar(&format, "format", "", "data format: csv or libsvm (default: from the file extension)")
	fs.StringVar(&label, "label", "", "label column name (CSV; default for --dataset iris: species)")
	fs.Var(&features, "features", "feature columns, comma-separated (default: every column but the label)")
	fs.Float64Var(&evalFraction, "eval-fraction", 0, "without --eval, hold out this fraction of the training rows for evaluation")
	fs.StringVar(&modelDir, "model-dir", "", "folder that receives model.json (or .ubj) and metadata.json, e.g. <pvc>/models/<model>/<version>")
	fs.StringVar(&modelFormat, "model-format", "json", "model file format: json or ubj")
	fs.StringVar(&p.Objective, "objective", p.Objective, "learning objective, e.g. binary:logistic, multi:softprob, reg:squarederror")
	fs.IntVar(&p.NumRound, "num-round", p.NumRound, "boosting rounds")
	fs.IntVar(&p.MaxDepth, "max-depth", p.MaxDepth, "maximum tree depth")
	fs.Float64Var(&p.Eta, "eta", p.Eta, "learning rate")
	fs.Float64Var(&p.Subsample, "subsample", p.Subsample, "row subsample ratio per tree")
	fs.Float64Var(&p.ColsampleBytree, "colsample-bytree", p.ColsampleBytree, "column subsample ratio per tree")
	fs.Float64Var(&p.MinChildWeight, "min-child-weight", p.MinChildWeight, "minimum sum of hessian in a child")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, "L2 regularisation")
	fs.Float64Var(&p.Alpha, "alpha", p.Alpha, "L1 regularisation")
	fs.StringVar(&p.TreeMethod, "tree-method", p.TreeMethod, "tree method: hist, approx or exact")
	fs.IntVar(&p.NThread, "nthread", p.NThread, "threads per rank (0: all cores)")
	fs.IntVar(&p.Seed, "seed", p.Seed, "random seed")
	fs.IntVar(&p.NumClass, "num-class", p.NumClass, "classes for multi:* objectives (0: from the label column)")
	fs.Var(&evalMetric, "eval-metric", "evaluation metrics, comma-separated (default: the objective's)")
	fs.IntVar(&p.EarlyStoppingRounds, "early-stopping-rounds", 0, "stop when the last metric on the last evaluation set has not improved for this many rounds (0: off)")
	fs.Var(&extra, "param", "any other XGBoost parameter as key=value (repeatable)")
	fs.Var(&maxLine, "max-line-bytes", "longest input line (a CSV record, quoted line breaks included) accepted, e.g. 16MiB")
	fs.Var(&maxMatrix, "max-matrix-bytes", "largest dense matrix (rows x features x 4 bytes) one rank may load, e.g. 8GiB (0: a quarter of the memory available; with --local, shared by the ranks)")
	fs.IntVar(&logEvery, "log-every", 1, "log metrics every k rounds")
	fs.IntVar(&local, "local", 0, "run a local gang: a Master and this many Workers as processes on loopback")
	fs.IntVar(&watchPort, "watch-port", 0, "port rank 0 watches the gang on (default: tracker port + 1)")
	fs.DurationVar(&watchTimeout, "gang-timeout", 10*time.Second, "a rank silent this long counts as lost")
	fs.DurationVar(&startTimeout, "gang-start-timeout", train.DefaultGangStartTimeout, "how long ranks wait for the whole gang to join")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help asked for the usage; it is not a mistake
		}
		return exitUsage
	}
	if err := envflag.Fill(fs, envflag.Prefixed("GANGBOOST_"), os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitUsage
	}
	p.EvalMetric = evalMetric
	p.Extra = map[string]string{}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "gangboost-train: --param %q: want key=value\n", kv)
			return exitUsage
		}
		p.Extra[k] = v
	}

	// Every flag is checked here, before a local gang starts or any data is read, so a bad value
	// exits 2 at once instead of failing each rank later.
	usage := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "gangboost-train: "+format+"\n", a...)
		return exitUsage
	}
	if local < 0 {
		return usage("--local %d: want the number of Workers of a local gang (0: run one rank from the environment)", local)
	}
	if builtin == "" && trainPath == "" {
		return usage("no training data: give --train PATH or --dataset iris")
	}
	if builtin == "iris" && label == "" {
		label = "species"
	}
	if maxLine < 1 || maxLine > math.MaxInt32 {
		return usage("--max-line-bytes %d: want 1 to %d bytes", maxLine, math.MaxInt32)
	}
	if maxMatrix > math.MaxInt64 {
		return usage("--max-matrix-bytes %d: too large", maxMatrix)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if maxMatrix == 0 {
		maxMatrix = defaultMaxMatrix(log, local+1)
	}
	limits := dataset.Limits{MaxLineBytes: int(maxLine), MaxMatrixBytes: int64(maxMatrix)}
	job := train.Job{
		Params:       p,
		Train:        dataset.Spec{Path: trainPath, Format: format, Builtin: builtin, Label: label, Features: features, Limits: limits},
		EvalFraction: evalFraction,
		ModelDir:     modelDir,
		ModelFormat:  modelFormat,
		LogEvery:     logEvery,
		WatchPort:    watchPort,
		Watch:        gangwatch.Options{Timeout: watchTimeout, StartTimeout: startTimeout},
		Log:          log,
	}
	if evalPath != "" {
		job.Eval = &dataset.Spec{Path: evalPath, Format: format, Label: label, Features: features, Limits: limits}
	}
	if err := job.Validate(); err != nil {
		return usage("bad flags: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if local > 0 {
		// Each rank gets the share of the machine computed here, not a quarter of it each.
		return runLocal(ctx, local, append(args, "--max-matrix-bytes", strconv.FormatUint(uint64(maxMatrix), 10)))
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
func defaultMaxMatrix(log *slog.Logger, ranksHere int) byteSize {
	avail, err := sysmem.Available()
	if err != nil {
		log.Warn("no bound on the data matrix: cannot tell the memory available; give --max-matrix-bytes", "err", err)
		return 0
	}
	return byteSize(avail / 4 / uint64(max(ranksHere, 1)))
}

// runLocal re-runs this command as a local gang of 1 Master + workers processes, with the
// environment the Training Operator injects into XGBoostJob pods.
func runLocal(ctx context.Context, workers int, args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train:", err)
		return exitFailed
	}
	var rankArgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--local" || a == "-local":
			i++ // drop its value
		case strings.HasPrefix(a, "--local=") || strings.HasPrefix(a, "-local="):
		default:
			rankArgs = append(rankArgs, a)
		}
	}
	env := os.Environ()
	filtered := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GANGBOOST_LOCAL=") {
			filtered = append(filtered, kv)
		}
	}
	// One job: the launcher needs exactly its gang's slots.
	l := &localgang.Launcher{Slots: workers + 1}
	res, err := l.Run(ctx, localgang.Job{
		Name: "gangboost-train", Command: self, Args: rankArgs, Workers: workers,
		Env: filtered, Stdout: os.Stdout, PeerLostExitCode: exitLost,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-train: local gang failed:", err)
		return exitFailed
	}
	_ = res
	return 0
}
