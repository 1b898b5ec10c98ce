package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/evaluate"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/test/evaltest"
)

var update = flag.Bool("update", false, "rewrite component.yaml from evaluate.Component")

const generator = "internal/steps/evaluate.Component: go test ./components/evaluate -update"

// TestComponentYAML: component.yaml is the IR generated from evaluate.Component (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	kfptest.CheckComponentYAML(t, evaluate.Component(image), "component.yaml", generator, *update)
}

// TestDefaultsWriteEveryOutput: main, given component.yaml's defaults plus the required inputs
// (as the pipeline wires them from prepare-data, launch and deploy), evaluates the served Iris
// model and sets exactly the declared outputs: metrics, the confusion matrix KFP's UI draws,
// the HTML report, accuracy and rmse.
func TestDefaultsWriteEveryOutput(t *testing.T) {
	claim := t.TempDir()
	res := evaltest.Dataset(t, claim, prepare.Options{Dataset: "iris", Name: "iris", Seed: 42})
	uri := evaltest.Train(t, claim, res, "iris", "--objective", "multi:softprob", "--num-round", "10")
	url := evaltest.Serve(t, "iris", filepath.Join(claim, "models", "iris", "v1"))

	dir := t.TempDir()
	c := evaluate.Component(image)
	in := kfptest.ExecutorInput(t, c, map[string]any{
		"url": url, "model_name": "iris", "test_path": res.TestPath, "label": res.Schema.Label,
		"model_uri": uri, "pvc_mount_path": claim,
	}, dir)
	if code := run([]string{"--executor-input", string(in)}); code != 0 {
		t.Fatalf("evaluate exited %d", code)
	}
	out := kfptest.CheckOutputs(t, c, dir)
	if acc := out.GetParameterValues()["accuracy"].GetNumberValue(); acc < 0.85 {
		t.Errorf("accuracy = %v", acc)
	}
	metrics := out.GetArtifacts()["metrics"].GetArtifacts()[0].GetMetadata().GetFields()
	for _, k := range []string{"accuracy", "logloss", "rows", "calls", "p50_ms", "p99_ms"} {
		if _, ok := metrics[k]; !ok {
			t.Errorf("metrics lack %s: %v", k, metrics)
		}
	}
	cm := out.GetArtifacts()["confusion_matrix"].GetArtifacts()[0].GetMetadata().GetFields()["confusionMatrix"].GetStructValue().GetFields()
	specs, rows := cm["annotationSpecs"].GetListValue().GetValues(), cm["rows"].GetListValue().GetValues()
	if len(specs) != 3 || specs[0].GetStructValue().GetFields()["displayName"].GetStringValue() != "setosa" || len(rows) != 3 ||
		len(rows[0].GetStructValue().GetFields()["row"].GetListValue().GetValues()) != 3 {
		t.Errorf("confusionMatrix = %v", cm)
	}
	page, err := os.ReadFile(filepath.Join(dir, "artifacts", "report"))
	if err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("report: %v", err)
	}
}
