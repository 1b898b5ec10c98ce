// Package service is what REST and gRPC handlers call: find a ready model, decode a request
// against it within the limits, and evaluate through the model's predictor (the batcher when
// batching is on).
package service

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
)

// Name and Version are what GET /v2 reports.
const (
	Name    = "gangboost"
	Version = version.Version
)

// Extensions are the V2 protocol extensions this server implements.
var Extensions = []string{"binary_tensor_data", "model_repository"}

// Service serves the models of one registry.
type Service struct {
	Registry *registry.Registry
	Metrics  *metrics.Metrics
	Limits   infer.Limits
	// EvalTimeout bounds one request's evaluation: past the server's write deadline nobody can
	// read the answer, so the work stops there (0: no bound but the caller's context).
	EvalTimeout time.Duration
}

// NewPredictor is the registry's predictor factory: each loaded version's evaluator, observed
// by the metrics and, with batching on, behind a batcher of its own that stops when the version
// is released. With batching.MinRowCost, a version is batched only when its one-row evaluation
// (RowCost) takes at least that long.
func NewPredictor(m *metrics.Metrics, batching batcher.Options) func(*forest.Model) (infer.Predictor, func()) {
	return func(f *forest.Model) (infer.Predictor, func()) {
		var p infer.Predictor = observed{f, m}
		if batching.MaxBatchRows <= 0 {
			return p, nil
		}
		if batching.MinRowCost > 0 {
			cost := RowCost(f)
			on := cost >= batching.MinRowCost
			if log := batching.Log; log != nil {
				log.Info("batching chosen by the model's evaluation cost", "batching", on, "row_evaluation_us", float64(cost.Nanoseconds())/1000,
					"min_row_evaluation_us", float64(batching.MinRowCost.Nanoseconds())/1000, "trees", f.NumTrees())
			}
			if !on {
				return p, nil
			}
		}
		b := batcher.New(p, batching)
		return b, b.Close
	}
}

// Batched reports whether l's requests go through a batcher: with --enable_batching=auto its
// model's evaluation cost decided that at load.
func Batched(l *registry.Loaded) bool {
	_, ok := l.Predictor.(*batcher.Batcher)
	return ok
}

// RowCost is how long f takes to evaluate one row (of zeros, the same row each time, so with
// f in cache), in the fastest of a few short samples (fastestSample).
func RowCost(f *forest.Model) time.Duration {
	row := make([]float32, f.NumFeatures())
	var dst []float32
	ctx := context.Background()
	return fastestSample(func() { dst, _ = f.PredictContext(ctx, dst[:0], row, 1, forest.OutputDefault) })
}

// How fastestSample measures: samples of costSampleCalls calls after costWarmupCalls unmeasured;
// costMaxSamples of them, or costMinSamples once costBudget has passed, so that a very large
// model costs its load little more.
const (
	costWarmupCalls = 8
	costSampleCalls = 8
	costMinSamples  = 3
	costMaxSamples  = 16
	costBudget      = 50 * time.Millisecond
)

// fastestSample is the time one call of call takes in the fastest sample. The fastest, not the
// mean: the server measures while it starts, perhaps on a busy node or against a CPU quota, and
// a sample the scheduler interrupted measures the node rather than the model, so a mean of a
// few microseconds' calls is moved by one preemption past any threshold. Each sample is short
// (8 of Iris's calls take about 1.4 µs, of a 1000-tree model's about 55 µs), so it is unlikely
// that every sample is interrupted.
func fastestSample(call func()) time.Duration {
	for range costWarmupCalls {
		call()
	}
	begin := time.Now()
	fastest := time.Duration(math.MaxInt64)
	for n := 0; n < costMaxSamples && (n < costMinSamples || time.Since(begin) < costBudget); n++ {
		start := time.Now()
		for range costSampleCalls {
			call()
		}
		fastest = min(fastest, time.Since(start))
	}
	return fastest / costSampleCalls
}

// Acquire returns a model and its serving version; the caller releases the version when its
// request is done.
func (s *Service) Acquire(name, version string) (*registry.Model, *registry.Loaded, error) {
	m, err := s.Registry.Get(name, version)
	if err != nil {
		return nil, nil, err
	}
	l, err := m.Acquire()
	if err != nil {
		return m, nil, err
	}
	return m, l, nil
}

// Infer decodes c against the loaded model within the limits and evaluates it in w's memory
// (nil: its own); the outputs live in w until its next use. Evaluation stops between blocks of
// rows once ctx is done or EvalTimeout has passed.
func (s *Service) Infer(ctx context.Context, l *registry.Loaded, c *infer.Call, w *infer.Work) ([]infer.Output, error) {
	if w == nil {
		w = new(infer.Work)
	}
	req, err := w.Decode(l.Forest, l.FeatureNames(), c, s.Limits)
	if err != nil {
		return nil, err
	}
	// A deadline is armed only for evaluations it can stop: for the one-row requests that make
	// up most traffic its timer would cost more than the evaluation.
	if s.EvalTimeout > 0 && req.Interruptible(l.Forest) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.EvalTimeout,
			fmt.Errorf("evaluation exceeded %s, the time an answer may take to write (--request_timeout + grace)", s.EvalTimeout))
		defer cancel()
	}
	return w.Run(ctx, l.Forest, l.Predictor)
}

// ModelLabel is the metrics label for a requested model name: the name itself for a model this
// server has, "" for any other, so requests naming unknown models cannot grow the metrics.
func (s *Service) ModelLabel(name string) string {
	if s.Registry.Has(name) {
		return name
	}
	return ""
}

type observed struct {
	p infer.Predictor
	m *metrics.Metrics
}

func (o observed) PredictContext(ctx context.Context, dst, rows []float32, n int, kind forest.OutputKind) ([]float32, error) {
	if o.m != nil {
		o.m.ObserveBatch(n)
	}
	return o.p.PredictContext(ctx, dst, rows, n, kind)
}
