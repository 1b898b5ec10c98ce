// Package infer runs one inference request against a model: it checks the input tensor against
// the model's features, evaluates the requested outputs, and shapes them as XGBoost returns them.
// REST and gRPC decode into the same Request and encode the same Outputs.
package infer

import (
	"context"
	"slices"
	"sort"

	"github.com/gangboost/gangboost/runtime/forest"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Output names a client can request. output-0 is what XGBoost's Booster.predict returns, as
// KServe's xgbserver answers, so clients can switch servers without change.
const (
	OutputDefault  = "output-0"
	OutputPredict  = "predict"       // class labels (classifiers) or values (regression)
	OutputProba    = "predict_proba" // class probabilities
	OutputMargin   = "margin"        // untransformed margin
	OutputLeaf     = "leaf"          // leaf index per tree
	OutputContribs = "contribs"      // SHAP values, exact TreeSHAP, bias last
	InputName      = "input-0"
)

var outputKinds = map[string]forest.OutputKind{
	OutputDefault: forest.OutputDefault, OutputPredict: forest.OutputLabel, OutputProba: forest.OutputProba,
	OutputMargin: forest.OutputMargin, OutputLeaf: forest.OutputLeaf, OutputContribs: forest.OutputContribs,
}

// OutputNames lists the outputs a model can produce, output-0 first.
func OutputNames(m *forest.Model) []string {
	names := []string{OutputDefault}
	var rest []string
	for n, k := range outputKinds {
		if n == OutputDefault {
			continue
		}
		if _, err := m.Width(k); err == nil {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// Request is a decoded inference request: rows of features and the outputs wanted.
type Request struct {
	ID      string
	Rows    []float32 // NRows x model features, row-major, NaN = missing
	NRows   int
	Outputs []Output // resolved by Decode: known to the model, none twice
}

// OutputRequest names one output and whether it goes back as binary data.
type OutputRequest struct {
	Name   string
	Binary bool
}

// Output is one output tensor: requested (kind and width resolved) and, after Run, evaluated.
type Output struct {
	Name     string
	Datatype string // FP32, or INT64 for class labels
	Shape    []int64
	Values   []float32
	Binary   bool

	kind  forest.OutputKind
	width int
}

// Predictor evaluates rows; forest.Model is one, and so is the batcher in front of it. It stops
// between blocks of rows once ctx is done.
type Predictor interface {
	PredictContext(ctx context.Context, dst []float32, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error)
}

// RunInto evaluates req on model m through p (which may batch) into dst[:0], whose outputs'
// shape and value memory it reuses. Evaluation observes ctx: a client that went away or a
// deadline that passed stops it between blocks of rows.
func RunInto(ctx context.Context, m *forest.Model, p Predictor, req *Request, dst []Output) ([]Output, error) {
	result := dst[:0]
	for _, o := range req.Outputs {
		var prev Output
		result, prev = growOutputs(result)
		o.Datatype = datatype(m, o.kind)
		o.Shape = appendShape(prev.Shape[:0], m, o.kind, req.NRows, o.width)
		o.Values = prev.Values[:0]
		if req.NRows > 0 {
			// A large output's memory is taken only for a client still waiting: zeroing the
			// 120 MB of 2M rows' SHAP values took 1.5 s of a VM whose page faults are slow.
			n := req.NRows * o.width
			if n > largeOutput && cap(o.Values) < n && ctx.Err() != nil {
				return nil, stopped(ctx, o.Name)
			}
			vals, err := p.PredictContext(ctx, slices.Grow(o.Values, n), req.Rows, req.NRows, o.kind)
			if err != nil {
				if ctx.Err() != nil {
					return nil, stopped(ctx, o.Name)
				}
				return nil, v2.Errorf(v2.KindInternal, "output %q: %v", o.Name, err)
			}
			o.Values = vals
		}
		result[len(result)-1] = o
	}
	return result, nil
}

// largeOutput is the output size (values, 4 MB) above which RunInto looks at the context before
// it takes the output's memory; below it the memory costs less than a request's other work.
const largeOutput = 1 << 20

// stopped is the error of an evaluation the context ended: the client went away or its
// deadline passed.
func stopped(ctx context.Context, output string) error {
	return v2.Errorf(v2.KindTimeout, "output %q: evaluation stopped: %v", output, context.Cause(ctx))
}

// Interruptible reports whether evaluating r on m looks at the context after it has started
// (forest.Model.Interruptible), for one of its outputs or between them.
func (r *Request) Interruptible(m *forest.Model) bool {
	if len(r.Outputs) > 1 && r.NRows > 0 {
		return true
	}
	for _, o := range r.Outputs {
		if m.Interruptible(r.NRows, o.kind) {
			return true
		}
	}
	return false
}

// growOutputs extends outs by one and returns what the new slot held before.
func growOutputs(outs []Output) ([]Output, Output) {
	n := len(outs)
	if n < cap(outs) {
		outs = outs[:n+1]
		return outs, outs[n]
	}
	return append(outs, Output{}), Output{}
}

// Work is the memory one request's decode and evaluation reuse: its rows and its outputs. A
// handler that keeps one per request in flight (a sync.Pool) decodes and evaluates a stream of
// same-shaped requests without allocating. The request Decode returns and the outputs Run
// returns live in it until its next use.
type Work struct {
	req  Request
	outs []Output
}

// Decode decodes c into w (see DecodeInto); the request lives in w until its next use.
func (w *Work) Decode(f *forest.Model, featureNames []string, c *Call, lim Limits) (*Request, error) {
	if err := DecodeInto(&w.req, f, featureNames, c, lim); err != nil {
		return nil, err
	}
	return &w.req, nil
}

// Run evaluates the request Decode gave through p, into w (see RunInto).
func (w *Work) Run(ctx context.Context, f *forest.Model, p Predictor) ([]Output, error) {
	outs, err := RunInto(ctx, f, p, &w.req, w.outs)
	if err != nil {
		// A predictor that gave up on ctx (the batcher) may still read the rows and write the
		// values of a batch this request was in: w forgets both rather than hand them to
		// the next request.
		w.req.Rows, w.outs = nil, nil
		return nil, err
	}
	w.outs = outs
	return outs, nil
}

// Retained reports whether w's memory is small enough to keep for another request: a pool of
// Works that once served a 100,000-row request should not hold that much for one-row ones.
func (w *Work) Retained(maxValues int) bool {
	n := cap(w.req.Rows)
	for _, o := range w.outs[:cap(w.outs)] {
		n += cap(o.Values)
	}
	return n <= maxValues
}

func datatype(m *forest.Model, kind forest.OutputKind) string {
	if kind == forest.OutputLabel && m.IsClassifier() {
		return "INT64"
	}
	return "FP32"
}

// shape follows Booster.predict: one value per row is a vector [N], several a matrix [N, W];
// SHAP values of a multi-output model are [N, groups, features+1]. Probabilities are always
// [N, classes], as sklearn's predict_proba.
func shape(m *forest.Model, kind forest.OutputKind, n, width int) []int64 {
	return appendShape(nil, m, kind, n, width)
}

// appendShape is shape appended to dst.
func appendShape(dst []int64, m *forest.Model, kind forest.OutputKind, n, width int) []int64 {
	switch {
	case kind == forest.OutputContribs && m.NumGroups() > 1:
		return append(dst, int64(n), int64(m.NumGroups()), int64(m.NumFeatures()+1))
	case kind == forest.OutputProba:
		return append(dst, int64(n), int64(width))
	case width == 1:
		return append(dst, int64(n))
	}
	return append(dst, int64(n), int64(width))
}

// FeatureShape checks an input tensor's shape against the model: [N, features], or [features]
// for a single row. It returns the row count.
func FeatureShape(m *forest.Model, name string, shape []int64) (int, error) {
	f := int64(m.NumFeatures())
	switch {
	case len(shape) == 2 && shape[1] == f:
		return int(shape[0]), nil
	case len(shape) == 1 && shape[0] == f:
		return 1, nil
	case len(shape) == 2:
		return 0, v2.Errorf(v2.KindInvalidInput, "input %s: shape %v has %d features per row; the model expects %d (shape [N, %d])", name, shape, shape[1], f, f)
	}
	return 0, v2.Errorf(v2.KindInvalidInput, "input %s: shape %v; the model expects [N, %d]", name, shape, f)
}

// Metadata describes model m for GET /v2/models/{m}.
func Metadata(name, version string, m *forest.Model) v2.ModelMetadata {
	md := v2.ModelMetadata{
		Name: name, Platform: "xgboost",
		Inputs: []v2.TensorMetadata{{Name: InputName, Datatype: "FP32", Shape: []int64{-1, int64(m.NumFeatures())}}},
	}
	if version != "" {
		md.Versions = []string{version}
	}
	for _, n := range OutputNames(m) {
		kind := outputKinds[n]
		w, _ := m.Width(kind)
		sh := shape(m, kind, 1, w)
		sh[0] = -1
		md.Outputs = append(md.Outputs, v2.TensorMetadata{Name: n, Datatype: datatype(m, kind), Shape: sh})
	}
	return md
}

// MaxRowsError is returned for a request over the configured row limit.
func MaxRowsError(rows, max int) error {
	return v2.Errorf(v2.KindTooLarge, "request has %d rows; this server accepts at most %d per request (--max_batch_rows)", rows, max)
}
