// Package evaluate measures a served model on a test set: it sends the test rows to a V2 (Open
// Inference Protocol) REST endpoint in batches, as JSON and as binary tensors, computes accuracy,
// log loss and a confusion matrix (classifiers) or RMSE (regression) and the latency of its
// calls, and checks the served predictions against the trainer's own evaluation of the model.
package evaluate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/internal/training/dataset"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Protocols a run may use.
const (
	ProtocolJSON   = "json"
	ProtocolBinary = "binary"
	ProtocolBoth   = "both"
)

// DefaultBatchRows is the rows per call a run starts with. The runtime accepts 100000 rows and a
// 64 MiB body by default; a smaller batch keeps each call's latency a per-request figure and
// stays far inside other servers' limits. A 413 halves the batch.
const DefaultBatchRows = 256

// Options say what to evaluate.
type Options struct {
	URL, Model string
	// TestPath is the test CSV: claim-relative (as prepare-data outputs it) or absolute.
	TestPath, Label string
	// ModelURI, when set, names the model folder (pvc://<claim>/<path>, or a claim-relative or
	// absolute path) whose metadata.json gives the trainer's evaluation to compare with.
	ModelURI string
	// Tolerance bounds |served - trainer| per compared metric; negative turns the check off.
	Tolerance float64
	Protocol  string
	// Timeout bounds the wait for the model to be ready.
	Timeout time.Duration
	// Claim is where this process sees the claim; ClaimName is the claim's name (pvc_name).
	Claim, ClaimName string
	// ObjectStore reaches an s3:// ModelURI (credentials: AWS_* environment).
	ObjectStore objectstore.Config
	BatchRows   int
	HTTP        *http.Client
	Log         io.Writer
	// AuthTokenPath is a file holding a bearer token for the endpoint (Client.TokenPath).
	AuthTokenPath string
}

// Summary is a finished evaluation.
type Summary struct {
	URL, Model, TestPath, Protocol string
	Objective                      string             // from metadata.json; "" without model_uri
	ModelDir                       string             // the model folder read for the comparison
	Trainer                        *modeldir.Metadata // its metadata.json; nil without model_uri
	Rows, Features                 int
	ClassNames                     []string
	Classification                 *Classification // nil for regression
	Regression                     *Regression     // nil for classifiers
	Latencies                      []time.Duration // one per infer call
	BatchRows                      int
	Checks                         []Check
	Tolerance                      float64
	Notes                          []string
	// Contest is the comparison with the champion this summary's model (the challenger) took
	// part in; nil without a champion.
	Contest *Contest
}

// Calls is the number of infer calls made.
func (s *Summary) Calls() int { return len(s.Latencies) }

// DisagreementError says the served model's metrics differ from the trainer's beyond tolerance.
type DisagreementError struct {
	ModelDir, TestPath string
	Tolerance          float64
	Failed             []Check
}

func (e *DisagreementError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, c := range e.Failed {
		parts[i] = c.String()
	}
	return fmt.Sprintf("the served model disagrees with the trainer's evaluation (%s/%s) on %s beyond tolerance %g: %s; "+
		"check that the endpoint serves the model at model_uri and that the trainer's eval_data was this test set",
		e.ModelDir, modeldir.MetadataFile, e.TestPath, e.Tolerance, strings.Join(parts, "; "))
}

// Run evaluates. A *DisagreementError comes with a complete Summary: the caller may still
// record it before failing.
func Run(ctx context.Context, o Options) (*Summary, error) {
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	switch o.Protocol {
	case ProtocolJSON, ProtocolBinary, ProtocolBoth:
	default:
		return nil, fmt.Errorf("protocol %q: want json, binary or both", o.Protocol)
	}
	if o.URL == "" || o.Model == "" || o.TestPath == "" || o.Label == "" {
		return nil, errors.New("url, model_name, test_path and label are required")
	}
	if o.ClaimName != "" {
		if err := claim.CheckName(o.ClaimName); err != nil {
			return nil, err
		}
	}
	s := &Summary{URL: o.URL, Model: o.Model, TestPath: o.TestPath, Protocol: o.Protocol, Tolerance: o.Tolerance}
	var md *modeldir.Metadata
	if strings.HasPrefix(o.ModelURI, modelobjects.Scheme) {
		f, err := modelobjects.Open(o.ModelURI, o.ObjectStore, "evaluate")
		if err != nil {
			return nil, fmt.Errorf("model_uri: %w", err)
		}
		if md, err = f.ReadMetadata(ctx); err != nil {
			return nil, fmt.Errorf("model_uri %s: read the trainer's metadata: %w", o.ModelURI, err)
		}
		s.ModelDir, s.Objective, s.Trainer = strings.TrimSuffix(f.URI(), "/"), md.Objective, md
	} else if o.ModelURI != "" {
		dir, err := modelFolder(o.ModelURI, o.Claim, o.ClaimName)
		if err != nil {
			return nil, err
		}
		if md, err = modeldir.ReadMetadata(dir); err != nil {
			return nil, fmt.Errorf("model_uri %s: read the trainer's metadata: %w (is the claim mounted at %s?)", o.ModelURI, err, o.Claim)
		}
		s.ModelDir, s.Objective, s.Trainer = dir, md.Objective, md
	}
	testFile, err := claimPath(o.Claim, o.TestPath)
	if err != nil {
		return nil, fmt.Errorf("test_path: %w", err)
	}

	c := &Client{BaseURL: o.URL, Model: o.Model, HTTP: o.HTTP, TokenPath: o.AuthTokenPath}
	if err := c.WaitReady(ctx, o.Timeout, 5*time.Second, log); err != nil {
		return nil, err
	}
	smd, err := c.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	classifier := false
	k := 0
	if proba, ok := smd.Output("predict_proba"); ok && len(proba.Shape) == 2 {
		classifier, k = true, int(proba.Shape[1])
	}
	if md != nil && md.Objective != "" && classifier != isClassification(md.Objective) {
		return nil, fmt.Errorf("model %s at %s is served as a %s, but model_uri %s holds a %s model: the endpoint serves another model",
			o.Model, o.URL, kindName(classifier), o.ModelURI, md.Objective)
	}

	classes := knownClasses(md, testFile)
	// A categorical column holds the codes of the trainer's categories (prepare-data wrote them):
	// each must be one of the model's.
	var categories map[string][]string
	if md != nil {
		categories = md.Categories
	}
	m, err := dataset.Load(dataset.Spec{Path: testFile, Format: "csv", Label: o.Label, Classes: classes, Categories: categories}, dataset.Shard{})
	if err != nil {
		return nil, err
	}
	s.Rows, s.Features = m.Rows, m.Cols
	if md != nil && len(md.FeatureNames) > 0 && !slices.Equal(md.FeatureNames, m.FeatureNames) {
		return nil, fmt.Errorf("%s: feature columns %v differ from the model's %v (metadata.json)", o.TestPath, m.FeatureNames, md.FeatureNames)
	}
	if len(smd.Inputs) > 0 && len(smd.Inputs[0].Shape) == 2 && smd.Inputs[0].Shape[1] >= 0 && int(smd.Inputs[0].Shape[1]) != m.Cols {
		return nil, fmt.Errorf("%s has %d feature columns; model %s at %s takes %d", o.TestPath, m.Cols, o.Model, o.URL, smd.Inputs[0].Shape[1])
	}

	outputs := []string{"output-0"}
	var actual []float64
	if classifier {
		outputs = []string{"predict", "predict_proba"}
		if actual, s.ClassNames, err = classIndices(m, k, classes == nil, o.TestPath); err != nil {
			return nil, err
		}
		if classes == nil && m.Classes != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("class names %v come from %s itself (no model_uri, no schema.json): a class missing there shifts the indices", m.Classes, o.TestPath))
		}
		s.Classification = NewClassification(k)
	} else {
		if m.Classes != nil {
			return nil, fmt.Errorf("%s: label %q holds class names, but model %s is a regression model", o.TestPath, o.Label, o.Model)
		}
		actual = make([]float64, m.Rows)
		for i, l := range m.Labels {
			actual[i] = float64(l)
		}
		s.Regression = &Regression{}
	}

	if err := s.send(ctx, c, m, outputs, actual, k, o.BatchRows, log); err != nil {
		return nil, err
	}

	if md != nil {
		s.Checks = Compare(md, s, o.Tolerance)
		if len(s.Checks) == 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s/%s records no evaluation metric to compare with (merror, error, mlogloss, logloss or rmse on an eval set)", s.ModelDir, modeldir.MetadataFile))
		}
		var failed []Check
		for _, ch := range s.Checks {
			fmt.Fprintf(log, "compare with the trainer: %s\n", ch)
			if !ch.OK {
				failed = append(failed, ch)
			}
		}
		if len(failed) > 0 && o.Tolerance >= 0 {
			return s, &DisagreementError{ModelDir: s.ModelDir, TestPath: o.TestPath, Tolerance: o.Tolerance, Failed: failed}
		}
	}
	return s, nil
}

// send posts the test rows in batches, each batch once per protocol, and counts the answers.
func (s *Summary) send(ctx context.Context, c *Client, m *dataset.Matrix, outputs []string, actual []float64, k, batch int, log io.Writer) error {
	protocols := []bool{s.Protocol == ProtocolBinary}
	if s.Protocol == ProtocolBoth {
		protocols = []bool{false, true}
	}
	if batch <= 0 {
		batch = DefaultBatchRows
	}
	for start := 0; start < m.Rows; {
		n := min(batch, m.Rows-start)
		rows := m.Data[start*m.Cols : (start+n)*m.Cols]
		var answers []map[string]v2.Tensor
		var err error
		for _, bin := range protocols {
			t0 := time.Now()
			var a map[string]v2.Tensor
			a, err = c.Infer(ctx, fmt.Sprintf("evaluate-%d-%d", start, n), rows, n, m.Cols, outputs, bin)
			if err != nil {
				break
			}
			s.Latencies = append(s.Latencies, time.Since(t0))
			answers = append(answers, a)
		}
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusRequestEntityTooLarge && n > 1 {
			batch = max(n/2, 1)
			fmt.Fprintf(log, "the server refused %d rows per call (%s); sending %d\n", n, se.Message, batch)
			continue
		}
		if err != nil {
			return err
		}
		if len(answers) == 2 {
			if err := sameAnswers(answers[0], answers[1], outputs, start); err != nil {
				return fmt.Errorf("model %s at %s: JSON and binary answers differ: %w", s.Model, s.URL, err)
			}
		}
		if err := s.add(answers[0], actual[start:start+n], n, k); err != nil {
			return fmt.Errorf("model %s at %s, rows %d-%d: %w", s.Model, s.URL, start+1, start+n, err)
		}
		start += n
	}
	s.BatchRows = batch
	fmt.Fprintf(log, "sent %d rows in %d calls (%s, up to %d rows each): p50 %s, p99 %s\n", s.Rows, s.Calls(), s.Protocol, batch,
		Percentile(s.Latencies, 50).Round(time.Microsecond), Percentile(s.Latencies, 99).Round(time.Microsecond))
	return nil
}

func (s *Summary) add(a map[string]v2.Tensor, actual []float64, n, k int) error {
	if s.Classification != nil {
		pred, ok1 := a["predict"]
		proba, ok2 := a["predict_proba"]
		if !ok1 || !ok2 {
			return errors.New("the answer lacks predict or predict_proba")
		}
		if len(proba.Values) != n*k {
			return fmt.Errorf("predict_proba has shape %v, want [%d, %d]", proba.Shape, n, k)
		}
		return s.Classification.Add(actual, pred.Values, proba.Values)
	}
	out, ok := a["output-0"]
	if !ok {
		return errors.New("the answer lacks output-0")
	}
	if len(out.Values) != n {
		return fmt.Errorf("output-0 has shape %v: one value per row is needed for RMSE (a multi-output model is not supported)", out.Shape)
	}
	return s.Regression.Add(actual, out.Values)
}

// sameAnswers compares two answers bit for bit (NaN equals NaN).
func sameAnswers(j, b map[string]v2.Tensor, outputs []string, start int) error {
	for _, name := range outputs {
		x, y := j[name], b[name]
		if !slices.Equal(x.Shape, y.Shape) || x.Datatype != y.Datatype {
			return fmt.Errorf("output %s: JSON %s %v, binary %s %v", name, x.Datatype, x.Shape, y.Datatype, y.Shape)
		}
		width := 1
		if len(x.Shape) == 2 {
			width = int(x.Shape[1])
		}
		for i := range x.Values {
			if x.Values[i] != y.Values[i] && !(math.IsNaN(x.Values[i]) && math.IsNaN(y.Values[i])) {
				return fmt.Errorf("output %s, test row %d: JSON %v, binary %v", name, start+i/width+1, x.Values[i], y.Values[i])
			}
		}
	}
	return nil
}

// knownClasses is the class list a test file's string labels are numbered by: the trainer's
// (metadata.json), else prepare-data's (schema.json beside the test file), else nil (numeric
// labels, or names sorted from the file itself).
func knownClasses(md *modeldir.Metadata, testFile string) []string {
	if md != nil && len(md.Classes) > 0 {
		return md.Classes
	}
	if s, err := prepare.ReadSchema(filepath.Dir(testFile)); err == nil && s.LabelType == prepare.LabelString && len(s.Classes) > 0 {
		return s.Classes
	}
	return nil
}

// classIndices turns the test labels into class indices 0..k-1 and names the k classes.
func classIndices(m *dataset.Matrix, k int, fromFile bool, testPath string) ([]float64, []string, error) {
	actual := make([]float64, m.Rows)
	if m.Classes != nil {
		if len(m.Classes) > k || (!fromFile && len(m.Classes) != k) {
			return nil, nil, fmt.Errorf("%s: %d classes %v; the served model has %d", testPath, len(m.Classes), m.Classes, k)
		}
		for i, l := range m.Labels {
			actual[i] = float64(l)
		}
		names := slices.Clone(m.Classes)
		for len(names) < k {
			names = append(names, strconv.Itoa(len(names)))
		}
		return actual, names, nil
	}
	for i, l := range m.Labels {
		v := float64(l)
		if v != math.Trunc(v) || v < 0 || int(v) >= k {
			return nil, nil, fmt.Errorf("%s: data row %d: label %v is not a class index of the served model (0..%d)", testPath, i+1, v, k-1)
		}
		actual[i] = v
	}
	names := make([]string, k)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return actual, names, nil
}

func isClassification(objective string) bool {
	return strings.HasPrefix(objective, "binary:") || strings.HasPrefix(objective, "multi:")
}

func kindName(classifier bool) string {
	if classifier {
		return "classifier"
	}
	return "regression model"
}

// claimPath resolves a claim-relative path under the claim folder (an absolute one stays as it
// is); a relative path that leaves the claim is refused.
func claimPath(root, p string) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	return claim.Join(root, p)
}

// modelFolder maps model_uri to where this step sees it: pvc://<claim>/<path> is <path> on the
// mounted claim, which must be the claim this step mounts.
func modelFolder(uri, root, claimName string) (string, error) {
	if !strings.HasPrefix(uri, claim.Scheme) {
		dir, err := claimPath(root, uri)
		if err != nil {
			return "", fmt.Errorf("model_uri: %w", err)
		}
		return dir, nil
	}
	u, err := claim.ParseURI(uri)
	if err != nil {
		return "", fmt.Errorf("model_uri %w", err)
	}
	if claimName != "" && u.Claim != claimName {
		return "", fmt.Errorf("model_uri %s is on claim %q, but this step mounts claim %q (pvc_name)", uri, u.Claim, claimName)
	}
	return claim.Join(root, u.Path)
}
