// Package cmdline is gangboost-runtime's command line: its flags, their defaults and meanings,
// read from the arguments and the environment into Values. The runtime parses its own with it,
// and a deployment checks an InferenceService's runtime arguments with it (CheckDeploymentArgs)
// before the service exists, so an argument the runtime would refuse at start never reaches a
// pod that then restarts with back-off.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/envflag"
)

// Values are the runtime's settings as its flags give them.
type Values struct {
	// ModelName, ModelDir and ModelVersion are KServe's --model_name, --model_dir and
	// --model_version.
	ModelName, ModelDir, ModelVersion string
	HTTPPort, GRPCPort                int
	MaxBodyBytes                      int64
	MaxBatchRows                      int
	MaxResponseValues                 int
	MaxContribsRows                   int
	MaxInflightBodyBytes              int64
	RequestTimeout                    time.Duration
	MaxBatchSize                      int
	MaxBatchDelay                     time.Duration
	ShutdownTimeout                   time.Duration
	LogLevel                          slog.Level
	Check                             bool
	PprofPort                         int
	ExitOnLoadFailure                 bool
	Batching                          BatchingMode
	GCMinHeapMiB                      int
}

// NewFlagSet is the runtime's flag set, writing into v (which it sets to the defaults). Its
// errors are returned (flag.ContinueOnError); --help prints the usage to fs.Output.
func NewFlagSet(v *Values) *flag.FlagSet {
	fs := flag.NewFlagSet("gangboost-runtime", flag.ContinueOnError)
	fs.StringVar(&v.ModelName, "model_name", "model", "name the model is served under (the InferenceService name)")
	fs.StringVar(&v.ModelDir, "model_dir", "/mnt/models", "folder with model.json or model.ubj (+ metadata.json), or a repository of such folders")
	fs.StringVar(&v.ModelVersion, "model_version", "", "version the model is served as (optional)")
	fs.IntVar(&v.HTTPPort, "http_port", 8080, "REST port")
	fs.IntVar(&v.GRPCPort, "grpc_port", 8081, "gRPC port (0: off)")
	fs.Int64Var(&v.MaxBodyBytes, "max_body_bytes", 64<<20, "largest request body accepted")
	fs.IntVar(&v.MaxBatchRows, "max_batch_rows", 100000, "most rows one request may hold")
	fs.IntVar(&v.MaxResponseValues, "max_response_values", 16<<20, "most values one answer may hold: rows x values per row, over every requested output (413 beyond)")
	fs.IntVar(&v.MaxContribsRows, "max_contribs_rows", 1000, "most rows of a request that asks for SHAP values (contribs), which cost trees x depth^2 per row")
	fs.Int64Var(&v.MaxInflightBodyBytes, "max_inflight_body_bytes", 256<<20, "request bodies held in memory at once over all requests; a request beyond it gets 503 (0: no limit)")
	fs.DurationVar(&v.RequestTimeout, "request_timeout", 60*time.Second, "longest time to receive a request (408 after it); its answer must be written within 5s more (server.WriteGrace)")
	fs.IntVar(&v.MaxBatchSize, "max_batch_size", 64, "rows a merged batch collects before it runs")
	fs.DurationVar(&v.MaxBatchDelay, "max_batch_delay", time.Millisecond, "longest a batch gathers requests already on their way (none waits for requests not yet sent)")
	fs.DurationVar(&v.ShutdownTimeout, "shutdown_timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
	fs.TextVar(&v.LogLevel, "log_level", slog.LevelInfo, "debug, info, warn or error")
	fs.BoolVar(&v.Check, "check", false, "load the models in --model_dir as serving would, print each one's file and exit, 1 with the reason when one does not load; opens no port (a pre-flight for a model folder, e.g. make deploy-example's)")
	fs.IntVar(&v.PprofPort, "pprof_port", 0, "serve Go's pprof profiles (net/http/pprof) on 127.0.0.1 at this port, for profiling a load run (make load-profile); 0: off")
	fs.BoolVar(&v.ExitOnLoadFailure, "exit_on_load_failure", false, "exit 1 when a model fails to load at start, instead of staying up live but not ready; under KServe the failure then reaches the InferenceService's status.modelStatus.lastFailureInfo (with terminationMessagePolicy FallbackToLogsOnError) and the pod restarts with back-off")
	fs.IntVar(&v.GCMinHeapMiB, "gc_min_heap_mib", 8, "smallest heap goal of Go's collector, in MiB: a small live heap is collected once the heap has grown to it, not at Go's 4 MiB, for fewer collections under load (0: Go's own goal; above the live heap, GOGC's percentage rules as usual)")
	v.Batching = BatchingOff
	fs.Var(&v.Batching, "enable_batching", "merge concurrent requests into shared evaluations: true, false, or auto (only a model whose one-row evaluation takes "+AutoMinRowCost.String()+" or more: one of about 1000 trees of depth 8)")
	return fs
}

// Parse reads args, then for each flag args do not give its upper-case environment variable
// (MODEL_NAME, ...) through lookupEnv (os.LookupEnv in the runtime; nil: none). Usage and
// errors of the flag package go to out. A value out of range is an error naming the flag.
func Parse(args []string, lookupEnv func(string) (string, bool), out io.Writer) (*Values, error) {
	v := new(Values)
	fs := NewFlagSet(v)
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag (--name=value)", fs.Arg(0))
	}
	if lookupEnv != nil {
		if err := envflag.Fill(fs, envflag.Upper, lookupEnv); err != nil {
			return nil, err
		}
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	return v, nil
}

// check refuses values the flags' types allow but the runtime cannot serve with.
func (v *Values) check() error {
	for _, p := range []struct {
		name string
		port int
	}{{"http_port", v.HTTPPort}, {"grpc_port", v.GRPCPort}, {"pprof_port", v.PprofPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("--%s %d: want a port, 0 to 65535", p.name, p.port)
		}
	}
	// The limits on what one request may hold and ask for cannot be turned off: at 0 a
	// request's rows, its answer or its SHAP rows would be bounded by nothing but its body, and
	// the body by a default the flag does not show. A larger value raises one.
	for _, n := range []struct {
		name  string
		value int64
	}{
		{"max_body_bytes", v.MaxBodyBytes}, {"max_batch_rows", int64(v.MaxBatchRows)}, {"max_response_values", int64(v.MaxResponseValues)},
		{"max_contribs_rows", int64(v.MaxContribsRows)}, {"max_batch_size", int64(v.MaxBatchSize)},
	} {
		if n.value < 1 {
			return fmt.Errorf("--%s %d: want 1 or more (a limit cannot be turned off; a larger value raises it)", n.name, n.value)
		}
	}
	if v.MaxInflightBodyBytes < 0 {
		return fmt.Errorf("--max_inflight_body_bytes %d: want 0 (no limit) or more", v.MaxInflightBodyBytes)
	}
	if v.GCMinHeapMiB < 0 || v.GCMinHeapMiB > MaxGCMinHeapMiB {
		return fmt.Errorf("--gc_min_heap_mib %d: want 0 (Go's own heap goal) to %d", v.GCMinHeapMiB, MaxGCMinHeapMiB)
	}
	// Without a request timeout a connection could hold its goroutine forever sending nothing:
	// the header's and body's deadlines are the request timeout's.
	if v.RequestTimeout <= 0 {
		return fmt.Errorf("--request_timeout %s: want more than 0 (the time a request's header and body may take to arrive)", v.RequestTimeout)
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"max_batch_delay", v.MaxBatchDelay}, {"shutdown_timeout", v.ShutdownTimeout}} {
		if d.value < 0 {
			return fmt.Errorf("--%s %s: want 0 or more", d.name, d.value)
		}
	}
	return nil
}

// MaxGCMinHeapMiB bounds --gc_min_heap_mib: a minimum heap of gigabytes is memory a pod's limit
// would meet before the collector ran.
const MaxGCMinHeapMiB = 1024

// ServingRuntimeFlags are the flags the ServingRuntime gives every model's server (its name,
// where KServe puts the model, the ports its container declares), and --check, which serves
// nothing: an InferenceService's own arguments may not set them.
var ServingRuntimeFlags = []string{"model_name", "model_dir", "http_port", "grpc_port", "check"}

// Deployment arguments are bounded before they are parsed: an InferenceService's spec is not the
// place for more.
const (
	MaxDeploymentArgs     = 32
	MaxDeploymentArgBytes = 256
)

// CheckDeploymentArgs checks an InferenceService's runtime arguments (spec.predictor.model.args,
// which KServe appends to the ServingRuntime's): each a flag of the runtime with a value it
// takes (--name=value or --name value, as the runtime reads them), none of ServingRuntimeFlags.
func CheckDeploymentArgs(args []string) error {
	if len(args) > MaxDeploymentArgs {
		return fmt.Errorf("%d runtime arguments: at most %d", len(args), MaxDeploymentArgs)
	}
	for _, a := range args {
		if len(a) > MaxDeploymentArgBytes {
			return fmt.Errorf("runtime argument %.40q...: longer than %d bytes", a, MaxDeploymentArgBytes)
		}
	}
	v := new(Values)
	fs := NewFlagSet(v)
	fs.SetOutput(io.Discard) // its errors are returned; no usage for a deployment's log
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errors.New("runtime argument --help: not a setting")
		}
		return fmt.Errorf("runtime arguments: %w (gangboost-runtime --help lists its flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("runtime argument %q: not a flag; the runtime takes flags only (--name=value; a boolean flag's value goes after its =)", fs.Arg(0))
	}
	var reserved error
	fs.Visit(func(f *flag.Flag) {
		if reserved == nil && slices.Contains(ServingRuntimeFlags, f.Name) {
			reserved = fmt.Errorf("runtime argument --%s: the ServingRuntime sets it for every model (KServe gives the model's name, folder and ports)", f.Name)
		}
	})
	if reserved != nil {
		return reserved
	}
	return v.check()
}

// BatchingMode is --enable_batching: a boolean flag (given alone, true) that also takes auto.
type BatchingMode string

const (
	BatchingOff  BatchingMode = "false"
	BatchingOn   BatchingMode = "true"
	BatchingAuto BatchingMode = "auto"
)

// AutoMinRowCost is where --enable_batching=auto turns batching on: measured on the 2-core VM
// (2026-11-29, make load-test-batching), batching paid from models of about 1000 trees of depth
// 8, whose one-row evaluation service.RowCost times at 6.5-7.3 µs (2026-12-07, 300 timings of
// the same models; 500 trees, the break-even: 2.4-2.8 µs; 100 trees, which batching slows by
// a fifth: 0.6 µs).
const AutoMinRowCost = 5 * time.Microsecond

func (b *BatchingMode) String() string { return string(*b) }

func (b *BatchingMode) Set(v string) error {
	switch strings.ToLower(v) {
	case "true", "1", "t", "on":
		*b = BatchingOn
	case "false", "0", "f", "off":
		*b = BatchingOff
	case "auto":
		*b = BatchingAuto
	default:
		return fmt.Errorf("%q: want true, false or auto", v)
	}
	return nil
}

// IsBoolFlag lets --enable_batching stand alone, as the boolean flag it was.
func (b *BatchingMode) IsBoolFlag() bool { return true }
