// Package kfptest holds the checks every component's tests share: its component.yaml is what its
// Go definition generates, parses strictly as a PipelineSpec, and keeps KFP's placeholder rules.
package kfptest

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/kfp"
)

// CheckComponentYAML compares the file at path with c's generated YAML, rewriting the file first
// when update is set (go test -update). generator names how to regenerate it, for the header and
// the failure message.
func CheckComponentYAML(t *testing.T, c *kfp.Component, path, generator string, update bool) {
	t.Helper()
	want, err := c.YAML(generator)
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the component's Go definition; run %s", path, generator)
	}
	gotJSON, err := yaml.YAMLToJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	var spec pipelinespec.PipelineSpec
	if err := protojson.Unmarshal(gotJSON, &spec); err != nil {
		t.Fatalf("%s is not a PipelineSpec (strict): %v", path, err)
	}
	exec := spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()[c.ExecutorLabel()].GetStructValue().GetFields()["container"].GetStructValue()
	for _, v := range exec.GetFields()["command"].GetListValue().GetValues() {
		if s := v.GetStringValue(); strings.Contains(s, "{{") && s != "{{$}}" {
			t.Errorf("command has placeholder %q: only {{$}} is replaced in command", s)
		}
	}
	if img := exec.GetFields()["image"].GetStringValue(); img != c.Image {
		t.Errorf("image = %q, want %s", img, c.Image)
	}
	if bytes.Contains(got, []byte("concat")) || bytes.Contains(got, []byte("IfPresent")) {
		t.Errorf("%s uses Concat or IfPresent, which KFP's launcher does not resolve", path)
	}
}

// CheckREADME checks that the README at path documents every input and output of c, each
// named in backquotes.
func CheckREADME(t *testing.T, c *kfp.Component, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range c.InputNames() {
		if !strings.Contains(string(b), "`"+name+"`") {
			t.Errorf("%s does not document input `%s`", path, name)
		}
	}
	for _, o := range c.Outputs {
		if !strings.Contains(string(b), "`"+o.Name+"`") {
			t.Errorf("%s does not document output `%s`", path, o.Name)
		}
	}
}
