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

// TestBadNamesWriteNothing: a claim name that is not a PersistentVolumeClaim's (a newline splits
// log lines, bidi characters disguise it), a data set name that is "." or "..", and a CSV whose
// column names or class labels are not UTF-8 (KFP's metadata cannot carry them) fail the step
// before a byte of the split reaches the claim.
func TestBadNamesWriteNothing(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]any
		csv    string
	}{
		{"claim name with a newline", map[string]any{"pvc_name": "gangboost-models\nINFO done"}, ""},
		{"claim name with bidi characters", map[string]any{"pvc_name": "gangboost-\u202eslledom"}, ""},
		{"claim name in upper case", map[string]any{"pvc_name": "Models"}, ""},
		{"data set name ..", map[string]any{"name": ".."}, ""},
		{"data set name .", map[string]any{"name": "."}, ""},
		{"class labels not UTF-8", map[string]any{"label": "y"}, "a,y\n1,caf\xe9\n2,b\n3,caf\xe9\n4,b\n5,caf\xe9\n6,b\n"},
		{"column name not UTF-8", map[string]any{"label": "y"}, "\xff\xfe,y\n1,1\n2,0\n3,1\n4,0\n5,1\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			claim := filepath.Join(dir, "claim")
			if err := os.MkdirAll(claim, 0o755); err != nil {
				t.Fatal(err)
			}
			params := map[string]any{"pvc_mount_path": claim}
			if c.csv != "" {
				if err := os.WriteFile(filepath.Join(claim, "raw.csv"), []byte(c.csv), 0o644); err != nil {
					t.Fatal(err)
				}
				params["dataset"] = "raw.csv"
			}
			for k, v := range c.params {
				params[k] = v
			}
			in := kfptest.ExecutorInput(t, prepare.Component(image), params, dir)
			if code := run([]string{"--executor-input", string(in)}); code != 1 {
				t.Fatalf("prepare-data exited %d, want 1", code)
			}
			entries, err := os.ReadDir(claim)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "raw.csv" {
					t.Errorf("the failed step wrote %s to the claim", e.Name())
				}
			}
		})
	}
}
