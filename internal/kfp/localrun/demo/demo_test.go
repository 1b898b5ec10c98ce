package demo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp/localrun"
)

func TestSummary(t *testing.T) {
	work := t.TempDir()
	test := filepath.Join(work, "pvc", "models", "datasets", "iris", "test.csv")
	if err := os.MkdirAll(filepath.Dir(test), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(test, []byte("sepal_length,sepal_width,petal_length,petal_width,species\n5.1,3.5,1.4,0.2,0\n"), 0o644)
	res := &localrun.Result{WorkDir: work, State: localrun.StateSucceeded, Seconds: 8, Report: "/r/report.html", Summary: "/r/summary.json",
		Parameters: map[string]any{"workers": 2.0, "pvc_name": "models"},
		Tasks: []*localrun.TaskResult{
			{Name: "prepare-data", Component: prepareData, Seconds: 1, Outputs: map[string]any{"test_path": "datasets/iris/test.csv", "label": "species"}},
			{Name: "launch-xgboostjob", Component: launchJob, Seconds: 5, Outputs: map[string]any{"model_uri": "pvc://models/models/iris/v1"}},
			{Name: "deploy-inferenceservice", Component: deploy, Seconds: 1, Outputs: map[string]any{"url": "http://127.0.0.1:4000", "grpc_address": "127.0.0.1:4001", "model_name": "iris"}},
			{Name: "evaluate", Component: evaluate, Seconds: 1, Outputs: map[string]any{"accuracy": 0.9666666666, "rmse": 0.0},
				Artifacts: map[string][]localrun.ArtifactSummary{
					"metrics": {{Type: "system.Metrics", Metadata: map[string]any{"p50_ms": 0.8, "p99_ms": 2.5, "calls": 60.0}}},
					"confusion_matrix": {{Type: "system.ClassificationMetrics", Metadata: map[string]any{"confusionMatrix": map[string]any{
						"annotationSpecs": []any{map[string]any{"displayName": "setosa"}, map[string]any{"displayName": "versicolor"}},
						"rows":            []any{map[string]any{"row": []any{10.0, 0.0}}, map[string]any{"row": []any{1.0, 9.0}}}}}}},
				}},
		}}
	s := Summarize(res)
	var b bytes.Buffer
	s.Write(&b, false)
	out := b.String()
	for _, want := range []string{"SUCCEEDED (1 Master + 2 Workers) in 8.0s", "accuracy   0.966667", "versicolor",
		"model      " + filepath.Join(work, "pvc", "models", "models", "iris", "v1") + " (pvc://models/models/iris/v1)",
		"endpoint   http://127.0.0.1:4000 (REST), 127.0.0.1:4001 (gRPC)", "latency    p50 0.8 ms, p99 2.5 ms over 60 calls",
		`curl -s http://127.0.0.1:4000/v2/models/iris/infer -H 'Content-Type: application/json' -d '{"inputs":[{"data":[5.1,3.5,1.4,0.2],"datatype":"FP32","name":"input-0","shape":[1,4]}]}'`,
		"report     /r/report.html"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rmse") {
		t.Errorf("an rmse of 0 (classification) is shown:\n%s", out)
	}
}

// TestFormatCounts: a whole number is shown whole, however large; a fraction with six digits.
func TestFormatCounts(t *testing.T) {
	for in, want := range map[float64]string{4294967296: "4294967296", 2: "2", 0.9666666: "0.966667", 1e300: "1e+300"} {
		if got := format(in); got != want {
			t.Errorf("format(%v) = %q, want %q", in, got, want)
		}
	}
}

// served is a succeeded run whose summary has a curl line: an endpoint and a test set.
func served(t *testing.T) *localrun.Result {
	work := t.TempDir()
	test := filepath.Join(work, "pvc", "models", "test.csv")
	if err := os.MkdirAll(filepath.Dir(test), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(test, []byte("x,y\n1.5,0\n"), 0o644)
	return &localrun.Result{WorkDir: work, State: localrun.StateSucceeded, Seconds: 2, Report: "/r/report.html",
		Parameters: map[string]any{"pvc_name": "models"},
		Tasks: []*localrun.TaskResult{
			{Name: "prepare-data", Component: prepareData, Outputs: map[string]any{"test_path": "test.csv", "label": "y"}},
			{Name: "deploy-inferenceservice", Component: deploy, Outputs: map[string]any{"url": "http://127.0.0.1:4000", "model_name": "iris"}},
		}}
}

// TestRunOptions: the package and overrides as localrun reads them; the summary follows a
// successful run only, and says whether the endpoint stays up.
func TestRunOptions(t *testing.T) {
	var out bytes.Buffer
	o, err := RunOptions("../testdata/tiny-pipeline.yaml", []string{"text=hi"}, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if o.Package == nil || o.Params["text"] != "hi" || o.Out != &out || o.KeepServing || o.Finished == nil {
		t.Fatalf("options %+v", o)
	}
	failed := served(t)
	failed.State = localrun.StateFailed
	o.Finished(failed)
	if out.Len() != 0 {
		t.Errorf("a failed run printed a summary:\n%s", out.String())
	}
	o.Finished(served(t))
	if s := out.String(); !strings.HasPrefix(s, "\n== gangboost demo: SUCCEEDED in 2.0s ==\n") || !strings.Contains(s, "report     /r/report.html") ||
		!strings.Contains(s, "try        curl -s http://127.0.0.1:4000/v2/models/iris/infer") || !strings.Contains(s, "(the endpoint stopped with the run") {
		t.Errorf("summary:\n%s", s)
	}

	var kept bytes.Buffer
	o, err = RunOptions("../testdata/tiny-pipeline.yaml", nil, &kept, true)
	if err != nil || !o.KeepServing {
		t.Fatalf("keepServing: %+v %v", o, err)
	}
	o.Finished(served(t))
	if s := kept.String(); !strings.Contains(s, "try        curl") || strings.Contains(s, "the endpoint stopped with the run") {
		t.Errorf("keepServing summary:\n%s", s)
	}

	var usage *localrun.UsageError
	if _, err := RunOptions("../testdata/tiny-pipeline.yaml", []string{"text"}, &out, false); !errors.As(err, &usage) {
		t.Errorf("malformed --param: %v, want a usage error", err)
	}
}
