// Package trainflags is the one definition of gangboost-train's command line: every flag's name,
// default, usage and bounds, and the checks that run before any data is read. The trainer parses
// its arguments with it, and launch-xgboostjob parses the arguments it gives the trainer with it
// too, so a bad value fails the step before a job is created and a gang scheduled.
//
// It is pure Go (no libxgboost): the launch component is built without cgo.
package trainflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
	"github.com/gangboost/gangboost/internal/training/dataset"
)

// Model file formats --model-format takes, as XGBoost's save_model writes them (the same names as
// modeldir.FormatJSON and modeldir.FormatUBJ).
const (
	FormatJSON = "json"
	FormatUBJ  = "ubj"
)

// DefaultGangStartTimeout is how long the ranks wait for the whole gang to join.
const DefaultGangStartTimeout = 5 * time.Minute

// Flags are gangboost-train's settings, as its flags set them.
type Flags struct {
	Train, Eval, Dataset, Format, Label string
	Features                            []string
	// DataSchema is prepare-data's schema.json of the data: the categories its category
	// columns' codes stand for.
	DataSchema   string
	EvalFraction float64
	// GPUs are the GPUs each rank's pod holds (launch-xgboostjob passes its gpus input): a
	// libxgboost without CUDA refuses them at start instead of leaving them idle.
	GPUs                  int
	ModelDir, ModelFormat string
	// Producer is recorded in metadata.json as who wrote the model (launch-xgboostjob passes the
	// job's name): an existing --model-dir this producer wrote may be replaced (a retried job).
	Producer string
	// Overwrite lets the model replace an existing model folder that another producer wrote.
	Overwrite bool
	Params    Params
	// MaxLineBytes bounds an input line; MaxMatrixBytes the dense matrix of one rank (0: the
	// trainer picks a share of the memory available).
	MaxLineBytes, MaxMatrixBytes uint64
	LogEvery                     int
	// ObjectStore reaches the store of s3:// and minio:// data (credentials: AWS_* environment).
	ObjectStore dataset.ObjectStore
	// CheckpointDir receives the run's checkpoints ("": none); a restarted run resumes from the
	// newest one trained with the same settings and data.
	CheckpointDir string
	// A checkpoint is written after every CheckpointEveryRounds rounds (0: not by rounds) and
	// once CheckpointEverySeconds have passed since the last one (0: not by time); CheckpointKeep
	// are kept.
	CheckpointEveryRounds, CheckpointEverySeconds, CheckpointKeep int
	// Local is the number of Workers of a local gang (0: run one rank from the environment).
	Local, WatchPort int
	// LocalRestarts is how often a local gang starts again after a replica fails.
	LocalRestarts                 int
	GangTimeout, GangStartTimeout time.Duration

	evalMetric         stringList
	extra              paramList
	maxLine, maxMatrix byteSize
}

// Tunables are the flags a pipeline's training step sets per job (launch-xgboostjob takes each as
// the input of the same name with '_' for '-'); the others are the data, the model folder and how
// the process runs, which the launcher sets itself.
var Tunables = []string{
	"label", "features", "format", "eval-fraction", "objective", "num-round", "max-depth", "eta", "subsample",
	"colsample-bytree", "min-child-weight", "reg-lambda", "reg-alpha", "tree-method", "nthread", "seed", "num-class",
	"eval-metric", "early-stopping-rounds", "model-format", "log-every",
	"checkpoint-every-rounds", "checkpoint-every-seconds", "categorical",
}

// DefaultCheckpointEverySeconds is how often a run with a checkpoint folder writes a checkpoint
// by default: a lost rank costs at most this much boosting, and a checkpoint (the model so far,
// written by rank 0 while the others wait in the next round's collective) costs far less than
// a minute of training.
const DefaultCheckpointEverySeconds = 60

// InputName is the component input that sets flag: num-round -> num_round.
func InputName(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// New defines every flag on a new FlagSet named name, with its default.
func New(name string) (*Flags, *flag.FlagSet) {
	f := &Flags{Params: DefaultParams(), maxLine: byteSize(dataset.DefaultMaxLineBytes)}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	p := &f.Params
	fs.StringVar(&f.Train, "train", "", "training data: a CSV (header row), Parquet or LibSVM file, a folder of part files, or s3://bucket/key, s3://bucket/prefix/ (part files), minio://bucket/key")
	fs.StringVar(&f.Eval, "eval", "", "evaluation data (same format as --train)")
	fs.StringVar(&f.DataSchema, "data-schema", "", "schema.json of the data (prepare-data writes it beside train.csv): its category columns are trained as categorical, their codes named by its category lists")
	fs.StringVar(&f.Dataset, "dataset", "", "built-in data set instead of --train: iris")
	fs.StringVar(&f.Format, "format", "", "data format: csv, parquet or libsvm (default: from the file extension)")
	fs.StringVar(&f.ObjectStore.Endpoint, "s3-endpoint", "", "object store endpoint of s3:// data: host:port, http://host:port (plain HTTP) or https://host:port (default: AWS S3; for minio:// "+dataset.KFPMinIOEndpoint+"); credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&f.ObjectStore.Region, "s3-region", "", "object store region (default: the bucket's)")
	fs.BoolVar(&f.ObjectStore.PathStyle, "s3-path-style", false, "address buckets as endpoint/bucket (MinIO, Ceph) instead of bucket.endpoint")
	fs.BoolVar(&f.ObjectStore.Insecure, "s3-insecure", false, "plain HTTP to an --s3-endpoint given without a scheme (an in-cluster MinIO)")
	fs.StringVar(&f.Label, "label", "", "label column name (CSV; default for --dataset iris: species)")
	fs.Var(&stringListFlag{&f.Features}, "features", "feature columns, comma-separated (default: every column but the label)")
	fs.Var(&stringListFlag{&f.Params.Categorical}, "categorical", "feature columns trained as categorical, comma-separated: each holds category codes (integers from 0)")
	fs.IntVar(&f.GPUs, "gpus", 0, "GPUs this rank's pod holds (launch-xgboostjob passes its gpus input): a gangboost-train whose libxgboost has no CUDA refuses them instead of training on the CPU while they sit idle")
	fs.Float64Var(&f.EvalFraction, "eval-fraction", 0, "without --eval, hold out this fraction of the training rows for evaluation")
	fs.StringVar(&f.ModelDir, "model-dir", "", "folder that receives model.json (or .ubj) and metadata.json, e.g. <pvc>/models/<model>/<version>, or an object store prefix s3://<bucket>/<prefix>/<model>/<version>/ (through the --s3-* settings; metadata.json is written last); it must not exist yet, unless --producer wrote it or with --overwrite (a model folder is then replaced whole)")
	fs.StringVar(&f.Producer, "producer", "", "who writes the model, recorded in metadata.json (the job's name); an existing --model-dir the same producer wrote is replaced (a retried job)")
	fs.BoolVar(&f.Overwrite, "overwrite", false, "replace an existing model folder in --model-dir that another producer wrote")
	fs.StringVar(&f.ModelFormat, "model-format", FormatJSON, "model file format: json or ubj")
	fs.StringVar(&p.Objective, "objective", p.Objective, "learning objective, e.g. binary:logistic, multi:softprob, reg:squarederror")
	fs.IntVar(&p.NumRound, "num-round", p.NumRound, fmt.Sprintf("boosting rounds (1 to %d)", MaxNumRound))
	fs.IntVar(&p.MaxDepth, "max-depth", p.MaxDepth, "maximum tree depth")
	fs.Float64Var(&p.Eta, "eta", p.Eta, "learning rate")
	fs.Float64Var(&p.Subsample, "subsample", p.Subsample, "row subsample ratio per tree")
	fs.Float64Var(&p.ColsampleBytree, "colsample-bytree", p.ColsampleBytree, "column subsample ratio per tree")
	fs.Float64Var(&p.MinChildWeight, "min-child-weight", p.MinChildWeight, "minimum sum of hessian in a child")
	// XGBoost's scikit-learn names (reg_lambda, reg_alpha), which are Python keyword arguments
	// where "lambda" is not; the native names stay accepted.
	fs.Float64Var(&p.Lambda, "reg-lambda", p.Lambda, "L2 regularisation (XGBoost's lambda)")
	fs.Float64Var(&p.Alpha, "reg-alpha", p.Alpha, "L1 regularisation (XGBoost's alpha)")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, "same as --reg-lambda")
	fs.Float64Var(&p.Alpha, "alpha", p.Alpha, "same as --reg-alpha")
	fs.StringVar(&p.TreeMethod, "tree-method", p.TreeMethod, "tree method: hist, approx or exact")
	fs.IntVar(&p.NThread, "nthread", p.NThread, "threads per rank (0: all cores)")
	fs.IntVar(&p.Seed, "seed", p.Seed, "random seed")
	fs.IntVar(&p.NumClass, "num-class", p.NumClass, "classes for multi:* objectives (0: from the label column)")
	fs.Var(&f.evalMetric, "eval-metric", "evaluation metrics, comma-separated (default: the objective's)")
	fs.IntVar(&p.EarlyStoppingRounds, "early-stopping-rounds", 0, "stop when the last metric on the last evaluation set has not improved for this many rounds (0: off)")
	fs.Var(&f.extra, "param", "any other XGBoost parameter as key=value (repeatable)")
	fs.Var(&f.maxLine, "max-line-bytes", "longest input line (a CSV record, quoted line breaks included) accepted, e.g. 16MiB")
	fs.Var(&f.maxMatrix, "max-matrix-bytes", "largest dense matrix (rows x features x 4 bytes) one rank may load, e.g. 8GiB (0: a quarter of the memory available; with --local, shared by the ranks)")
	fs.IntVar(&f.LogEvery, "log-every", 1, "only every k-th round may get a progress line (at most one a second or per 1% of the rounds, and the last)")
	fs.StringVar(&f.CheckpointDir, "checkpoint-dir", "", "folder for checkpoints, e.g. <pvc>/checkpoints/<model>/<version>: rank 0 writes one every --checkpoint-every-rounds or --checkpoint-every-seconds, and a restarted gang resumes from the newest one trained with the same settings and data")
	fs.IntVar(&f.CheckpointEveryRounds, "checkpoint-every-rounds", 0, "write a checkpoint after every N rounds (0: by time only)")
	fs.IntVar(&f.CheckpointEverySeconds, "checkpoint-every-seconds", DefaultCheckpointEverySeconds, "write a checkpoint once this many seconds have passed since the last (0: by rounds only)")
	fs.IntVar(&f.CheckpointKeep, "checkpoint-keep", 2, "checkpoints kept in --checkpoint-dir (the newest ones)")
	fs.IntVar(&f.Local, "local", 0, "run a local gang: a Master and this many Workers as processes on loopback")
	fs.IntVar(&f.LocalRestarts, "local-restarts", 0, "with --local: start the whole gang again up to this many times after a replica fails (as an XGBoostJob with restartPolicy OnFailure), resuming from --checkpoint-dir")
	fs.IntVar(&f.WatchPort, "watch-port", 0, "port rank 0 watches the gang on (default: tracker port + 1)")
	fs.DurationVar(&f.GangTimeout, "gang-timeout", 10*time.Second, "a rank silent this long counts as lost")
	fs.DurationVar(&f.GangStartTimeout, "gang-start-timeout", DefaultGangStartTimeout, "how long ranks wait for the whole gang to join")
	return f, fs
}

// Finish completes f once its FlagSet is parsed (and filled from the environment): it gathers the
// list flags, applies defaults that depend on other flags, and checks every value. The error
// names the flag and the values it takes.
func (f *Flags) Finish() error {
	f.Params.EvalMetric = f.evalMetric
	f.Params.Extra = map[string]string{}
	for _, kv := range f.extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--param %q: want key=value", kv)
		}
		f.Params.Extra[k] = v
	}
	if f.Dataset == "iris" && f.Label == "" {
		f.Label = "species"
	}
	f.MaxLineBytes, f.MaxMatrixBytes = uint64(f.maxLine), uint64(f.maxMatrix)
	return f.Validate()
}

// Validate checks every setting, before a local gang starts or any data is read.
func (f *Flags) Validate() error {
	if f.Local < 0 {
		return fmt.Errorf("--local %d: want the number of Workers of a local gang (0: run one rank from the environment)", f.Local)
	}
	if f.GPUs < 0 {
		return fmt.Errorf("--gpus %d: want 0 or more", f.GPUs)
	}
	if f.LocalRestarts < 0 {
		return fmt.Errorf("--local-restarts %d: want 0 or more", f.LocalRestarts)
	}
	if f.Dataset == "" && f.Train == "" {
		return errors.New("no training data: give --train PATH or --dataset iris")
	}
	if f.MaxLineBytes < 1 || f.MaxLineBytes > math.MaxInt32 {
		return fmt.Errorf("--max-line-bytes %d: want 1 to %d bytes", f.MaxLineBytes, math.MaxInt32)
	}
	if f.MaxMatrixBytes > math.MaxInt64 {
		return fmt.Errorf("--max-matrix-bytes %d: too large", f.MaxMatrixBytes)
	}
	if f.WatchPort < 0 || f.WatchPort > 65535 {
		return fmt.Errorf("--watch-port %d: want 0 (tracker port + 1) or a port up to 65535", f.WatchPort)
	}
	if err := f.Params.Validate(); err != nil {
		return err
	}
	if err := CheckCheckpointing(f.CheckpointEveryRounds, f.CheckpointEverySeconds, f.CheckpointKeep); err != nil {
		return err
	}
	if err := CheckModelFormat(f.ModelFormat); err != nil {
		return err
	}
	return CheckEvalFraction(f.EvalFraction)
}

// CheckModelFormat checks --model-format ("" means json).
func CheckModelFormat(format string) error {
	switch format {
	case "", FormatJSON, FormatUBJ:
		return nil
	}
	return fmt.Errorf("model format %q: want json or ubj", format)
}

// CheckCheckpointing checks the checkpoint intervals and how many are kept.
func CheckCheckpointing(everyRounds, everySeconds, keep int) error {
	switch {
	case everyRounds < 0:
		return fmt.Errorf("--checkpoint-every-rounds %d: want 0 (by time only) or more", everyRounds)
	case everySeconds < 0:
		return fmt.Errorf("--checkpoint-every-seconds %d: want 0 (by rounds only) or more", everySeconds)
	case keep < 1:
		return fmt.Errorf("--checkpoint-keep %d: want 1 or more", keep)
	}
	return nil
}

// CheckEvalFraction checks --eval-fraction.
func CheckEvalFraction(fraction float64) error {
	// Written as a negation so that NaN fails too.
	if !(fraction >= 0 && fraction < 1) {
		return fmt.Errorf("eval fraction %g: want 0 <= fraction < 1 (0: no evaluation split)", fraction)
	}
	return nil
}

// Check parses a trainer command line as gangboost-train would (without its environment) and
// checks it: what the launcher runs before it creates a job.
func Check(args []string) error {
	_, err := Parse(args)
	return err
}

// Parse is Check that also returns the parsed flags.
func Parse(args []string) (*Flags, error) {
	f, fs := New("gangboost-train")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("trainer flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("trainer flags: unexpected argument %q", fs.Arg(0))
	}
	if err := f.Finish(); err != nil {
		return nil, err
	}
	return f, nil
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

// stringList is a comma-separated list flag; a repeated flag adds to it.
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

// paramList is --param's list: key=value pairs separated by commas outside brackets, so that a
// list value such as quantile_alpha=[0.1,0.9] stays one pair; a repeated flag adds to it.
type paramList []string

func (s *paramList) String() string { return strings.Join(*s, ",") }
func (s *paramList) Set(v string) error {
	depth, start := 0, 0
	add := func(p string) {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	for i, r := range v {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth <= 0 {
				add(v[start:i])
				start = i + 1
			}
		}
	}
	add(v[start:])
	return nil
}

// stringListFlag is a stringList kept in a []string field.
type stringListFlag struct{ s *[]string }

func (l stringListFlag) String() string {
	if l.s == nil {
		return ""
	}
	return strings.Join(*l.s, ",")
}
func (l stringListFlag) Set(v string) error { return (*stringList)(l.s).Set(v) }
