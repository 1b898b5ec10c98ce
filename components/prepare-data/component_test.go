package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/prepare"
)

var update = flag.Bool("update", false, "rewrite component.yaml from prepare.Component")

const generator = "internal/steps/prepare.Component: go test ./components/prepare-data -update"

// TestComponentYAML: component.yaml is the IR generated from prepare.Component (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	kfptest.CheckComponentYAML(t, prepare.Component(image), "component.yaml", generator, *update)
}

// TestDefaultsWriteEveryOutput: main, given the ExecutorInput KFP builds from component.yaml's
// defaults, writes the Iris split to the claim and sets exactly the declared outputs.
func TestDefaultsWriteEveryOutput(t *testing.T) {
	dir := t.TempDir()
	claim := filepath.Join(dir, "claim")
	c := prepare.Component(image)
	in := kfptest.ExecutorInput(t, c, map[string]any{"pvc_mount_path": claim}, dir)
	if code := run([]string{"--executor-input", string(in)}); code != 0 {
		t.Fatalf("prepare-data exited %d", code)
	}
	out := kfptest.CheckOutputs(t, c, dir)
	if got := out.GetParameterValues()["train_path"].GetStringValue(); got != "datasets/iris/train.csv" {
		t.Errorf("train_path = %q", got)
	}
	if got := out.GetParameterValues()["label"].GetStringValue(); got != "species" {
		t.Errorf("label = %q", got)
	}
	md := out.GetArtifacts()["dataset"].GetArtifacts()[0].GetMetadata().GetFields()
	if md["rows"].GetNumberValue() != 150 || md["test_rows"].GetNumberValue() != 30 || len(md["classes"].GetListValue().GetValues()) != 3 {
		t.Errorf("dataset metadata = %v", md)
	}
	for _, f := range []string{"train.csv", "test.csv", "schema.json"} {
		if _, err := os.Stat(filepath.Join(claim, "datasets", "iris", f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBadInputExitsNonZero: a CSV without the label column fails the step, naming the file.
func TestBadInputExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	claim := filepath.Join(dir, "claim")
	if err := os.MkdirAll(claim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claim, "raw.csv"), []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := kfptest.ExecutorInput(t, prepare.Component(image), map[string]any{"pvc_mount_path": claim, "dataset": "raw.csv", "label": "y"}, dir)
	if code := run([]string{"--executor-input", string(in)}); code != 1 {
		t.Fatalf("prepare-data exited %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "executor_output.json")); err == nil {
		t.Error("a failed step wrote an executor output")
	}
}
