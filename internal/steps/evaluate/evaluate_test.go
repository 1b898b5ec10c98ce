package evaluate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/steps/evaluate"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/test/evaltest"
)

// irisServed prepares Iris on a claim folder, trains 20 rounds on train.csv with test.csv as the
// evaluation set, and serves the model; it returns the claim, the split, the model_uri and URL.
func irisServed(t *testing.T, runtimeFlags ...string) (claim string, res *prepare.Result, modelURI, url string) {
	claim = t.TempDir()
	res = evaltest.Dataset(t, claim, prepare.Options{Dataset: "iris", Name: "iris", Seed: 42})
	modelURI = evaltest.Train(t, claim, res, "iris", "--objective", "multi:softprob", "--num-round", "20", "--eval-metric", "merror,mlogloss")
	url = evaltest.Serve(t, "iris", filepath.Join(claim, "models", "iris", "v1"), runtimeFlags...)
	return claim, res, modelURI, url
}

func options(claim, url string, res *prepare.Result, modelURI string) evaluate.Options {
	return evaluate.Options{URL: url, Model: "iris", TestPath: res.TestPath, Label: res.Schema.Label, ModelURI: modelURI,
		Tolerance: 0.02, Protocol: evaluate.ProtocolBoth, Timeout: 20 * time.Second, Claim: claim, ClaimName: evaltest.ClaimName}
}

// TestIrisAgainstRuntime: the Iris test set sent to the real runtime as JSON and binary tensors
// gives the same answers both ways; accuracy and log loss match the trainer's final eval-merror
// and eval-mlogloss on the same rows, and the confusion matrix counts every row once.
func TestIrisAgainstRuntime(t *testing.T) {
	claim, res, modelURI, url := irisServed(t)
	var log bytes.Buffer
	o := options(claim, url, res, modelURI)
	o.Log = &log
	s, err := evaluate.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if s.Rows != 30 || s.Calls() != 2 || s.Classification == nil || !slices.Equal(s.ClassNames, []string{"setosa", "versicolor", "virginica"}) {
		t.Fatalf("summary: rows %d, calls %d, classes %v", s.Rows, s.Calls(), s.ClassNames)
	}
	if acc := s.Classification.Accuracy(); acc < 0.85 {
		t.Errorf("accuracy %v, want >= 0.85", acc)
	}
	total := 0
	for i, row := range s.Classification.Confusion {
		n := 0
		for _, c := range row {
			n += c
		}
		if n != 10 {
			t.Errorf("class %s: %d test rows in the confusion matrix, want 10", s.ClassNames[i], n)
		}
		total += n
	}
	if len(s.Checks) != 2 {
		t.Fatalf("checks = %v, want eval-merror and eval-mlogloss", s.Checks)
	}
	for _, c := range s.Checks {
		// The same rows through the same trees: error rates agree (the same rows are wrong), log
		// loss to float32 rounding.
		if (c.Trainer == "eval-merror" && math.Abs(c.Got-c.Want) > 1e-12) || math.Abs(c.Got-c.Want) > 1e-5 {
			t.Errorf("%s", c)
		}
	}
	if !strings.Contains(log.String(), "model iris is ready") || !strings.Contains(log.String(), "sent 30 rows in 2 calls") {
		t.Errorf("log:\n%s", log.String())
	}
	page := string(evaluate.Report(s))
	if !strings.Contains(page, "<svg") || !strings.Contains(page, "eval-mlogloss vs logloss") || strings.Contains(page, "<script") {
		t.Errorf("report:\n%s", page)
	}
}

// TestBatchesAndServerLimit: small batches give the same metrics in more calls; a server that
// accepts fewer rows than a batch answers 413 and the client halves its batch until it fits.
func TestBatchesAndServerLimit(t *testing.T) {
	claim, res, modelURI, url := irisServed(t, "--max_batch_rows", "10")
	o := options(claim, url, res, modelURI)
	o.Protocol = evaluate.ProtocolBinary
	o.BatchRows = 7
	small, err := evaluate.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if small.Calls() != 5 {
		t.Errorf("30 rows in batches of 7: %d calls, want 5", small.Calls())
	}
	var log bytes.Buffer
	o.BatchRows, o.Protocol, o.Log = 0, evaluate.ProtocolJSON, &log
	big, err := evaluate.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if big.BatchRows > 10 || !strings.Contains(log.String(), "at most 10 per request (--max_batch_rows)") {
		t.Errorf("batch %d after the server's 413; log:\n%s", big.BatchRows, log.String())
	}
	if big.Classification.Accuracy() != small.Classification.Accuracy() || big.Classification.LogLoss() != small.Classification.LogLoss() {
		t.Errorf("batching changed the metrics: %v/%v vs %v/%v", big.Classification.Accuracy(), big.Classification.LogLoss(),
			small.Classification.Accuracy(), small.Classification.LogLoss())
	}
}

// TestDisagreementFails: compared with metadata.json claiming another final log loss, the run
// fails naming both values, and still returns the whole summary for the report.
func TestDisagreementFails(t *testing.T) {
	claim, res, _, url := irisServed(t)
	src := filepath.Join(claim, "models", "iris", "v1")
	md, err := modeldir.ReadMetadata(src)
	if err != nil {
		t.Fatal(err)
	}
	ll := md.Metrics["eval-mlogloss"]
	ll[len(ll)-1] += 0.5
	other := filepath.Join(claim, "models", "iris", "other")
	model, err := os.ReadFile(filepath.Join(src, md.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := modeldir.Publish(other, md.ModelFile, model, md, false); err != nil {
		t.Fatal(err)
	}
	s, err := evaluate.Run(context.Background(), options(claim, url, res, "pvc://"+evaltest.ClaimName+"/models/iris/other"))
	var d *evaluate.DisagreementError
	if !errors.As(err, &d) || s == nil {
		t.Fatalf("error = %v, want a disagreement with a summary", err)
	}
	if len(d.Failed) != 1 || d.Failed[0].Trainer != "eval-mlogloss" || !strings.Contains(err.Error(), "beyond tolerance 0.02") {
		t.Errorf("error = %v", err)
	}
	o := options(claim, url, res, "pvc://"+evaltest.ClaimName+"/models/iris/other")
	o.Tolerance = -1
	if _, err := evaluate.Run(context.Background(), o); err != nil {
		t.Errorf("a negative tolerance still failed: %v", err)
	}
	if _, err := evaluate.Run(context.Background(), options(claim, url, res, "pvc://another-claim/models/iris/v1")); err == nil ||
		!strings.Contains(err.Error(), `is on claim "another-claim", but this step mounts claim "gangboost-models"`) {
		t.Errorf("model_uri on another claim: %v", err)
	}
}

// TestEndpointErrors: an endpoint nobody listens on fails after timeout_seconds naming the URL
// and the refusal; a model the server does not have fails at once with the server's 404 message
// and the models it has; a bad request names the server's {"error"} message.
func TestEndpointErrors(t *testing.T) {
	claim, res, _, url := irisServed(t)
	// hang guards a run that would otherwise wait forever; every run here ends by its own error,
	// so the guard firing shows as a context error, not as the error the check wants.
	const hangGuard = 2 * time.Minute
	down := fmt.Sprintf("http://127.0.0.1:%d", evaltest.FreePort(t))
	o := options(claim, down, res, "")
	o.Timeout = time.Second
	var log bytes.Buffer
	o.Log = &log
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	start := time.Now()
	_, err := evaluate.Run(ctx, o)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "not ready within 1s") || !strings.Contains(err.Error(), down+"/v2/models/iris/ready") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("server down: %v", err)
	}
	// The timeout cannot fire early; how late it fires depends on the machine, so it is only logged.
	if took < o.Timeout {
		t.Errorf("server down: gave up after %s, before the %s timeout", took, o.Timeout)
	}
	t.Logf("server down: gave up after %s with a %s timeout", took.Round(time.Millisecond), o.Timeout)
	if !strings.Contains(log.String(), "waiting for model iris at "+down) {
		t.Errorf("no progress line while waiting:\n%s", log.String())
	}

	// A readiness timeout far beyond the hang guard: the 404 can only come back (rather than the
	// guard's context error) if the step gave up on the first answer instead of waiting it out.
	o = options(claim, url, res, "")
	o.Model = "irs"
	o.Timeout = 10 * time.Minute
	log.Reset()
	o.Log = &log
	ctx, cancel = context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err = evaluate.Run(ctx, o)
	var se *evaluate.StatusError
	if !errors.As(err, &se) || se.Status != 404 || !strings.Contains(err.Error(), url+"/v2/models/irs/ready: 404 Not Found") ||
		!strings.Contains(err.Error(), "(the server has: iris)") {
		t.Errorf("unknown model: %v", err)
	}
	if strings.Contains(log.String(), "waiting for model") {
		t.Errorf("unknown model: the step waited for a model the server says it does not have:\n%s", log.String())
	}

	c := &evaluate.Client{BaseURL: url, Model: "iris"}
	_, err = c.Infer(context.Background(), "x", []float32{1, 2, 3}, 1, 3, []string{"predict"}, false)
	if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Message, "the model expects 4") {
		t.Errorf("bad request: %v", err)
	}
}

// TestRegression: a regression model is measured by RMSE, which matches the trainer's eval-rmse.
func TestRegression(t *testing.T) {
	claim := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	b.WriteString("a,b,c,y\n")
	for i := 0; i < 300; i++ {
		a, bb, c := r.Float64()*4, r.NormFloat64(), r.Float64()
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%.4f\n", a, bb, c, 2*a-bb+0.1*r.NormFloat64())
	}
	if err := os.WriteFile(filepath.Join(claim, "reg.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := evaltest.Dataset(t, claim, prepare.Options{Dataset: "reg.csv", Name: "reg", Label: "y", Seed: 1})
	uri := evaltest.Train(t, claim, res, "reg", "--objective", "reg:squarederror", "--num-round", "30")
	url := evaltest.Serve(t, "reg", filepath.Join(claim, "models", "reg", "v1"))
	o := options(claim, url, res, uri)
	o.Model = "reg"
	s, err := evaluate.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Regression == nil || s.Classification != nil || len(s.Checks) != 1 || s.Checks[0].Trainer != "eval-rmse" || math.Abs(s.Checks[0].Got-s.Checks[0].Want) > 1e-4 {
		t.Fatalf("regression summary: %+v, checks %v", s, s.Checks)
	}
	if m := s.Metrics(); m["rmse"] == nil || m["accuracy"] != nil {
		t.Errorf("metrics = %v", m)
	}
	if js, _ := json.Marshal(s.ConfusionMatrix()); string(js) != "{}" {
		t.Errorf("regression confusion matrix = %s", js)
	}
}
