package kfptest

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
)

// ExecutorInput is the {{$}} KFP's launcher gives a task of c: params over c's defaults, an
// output parameter file and a file:// artifact URI under dir for every declared output, and
// outputs.outputFile dir/executor_output.json.
func ExecutorInput(t *testing.T, c *kfp.Component, params map[string]any, dir string) []byte {
	t.Helper()
	all := c.DefaultParameters()
	for k, v := range params {
		all[k] = v
	}
	s, err := structpb.NewStruct(all)
	if err != nil {
		t.Fatal(err)
	}
	outs := &pipelinespec.ExecutorInput_Outputs{
		Parameters: map[string]*pipelinespec.ExecutorInput_OutputParameter{},
		Artifacts:  map[string]*pipelinespec.ArtifactList{},
		OutputFile: filepath.Join(dir, "executor_output.json"),
	}
	for _, o := range c.Outputs {
		if o.Artifact != "" {
			outs.Artifacts[o.Name] = &pipelinespec.ArtifactList{Artifacts: []*pipelinespec.RuntimeArtifact{{
				Name: o.Name, Uri: "file://" + filepath.Join(dir, "artifacts", o.Name),
				Type: &pipelinespec.ArtifactTypeSchema{Kind: &pipelinespec.ArtifactTypeSchema_SchemaTitle{SchemaTitle: o.Artifact}},
			}}}
			continue
		}
		outs.Parameters[o.Name] = &pipelinespec.ExecutorInput_OutputParameter{OutputFile: filepath.Join(dir, "parameters", o.Name)}
	}
	b, err := protojson.Marshal(&pipelinespec.ExecutorInput{
		Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: s.GetFields()}, Outputs: outs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckOutputs reads the ExecutorOutput a run with ExecutorInput(t, c, _, dir) wrote (strictly,
// as the launcher does) and checks that it sets exactly c's declared output parameters, each
// also in its output file, and records exactly c's declared artifacts. An artifact whose URI is
// kept (empty in the output) must have its file written, except those listed in noFile (e.g.
// system.Metrics, whose values live in the metadata). It returns the output.
func CheckOutputs(t *testing.T, c *kfp.Component, dir string, noFile ...string) *pipelinespec.ExecutorOutput {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "executor_output.json"))
	if err != nil {
		t.Fatalf("no executor output: %v", err)
	}
	out, err := kfp.ParseExecutorOutput(b)
	if err != nil {
		t.Fatal(err)
	}
	wantParams, wantArtifacts := map[string]bool{}, map[string]bool{}
	for _, o := range c.Outputs {
		if o.Artifact != "" {
			wantArtifacts[o.Name] = true
		} else {
			wantParams[o.Name] = true
		}
	}
	for name := range out.GetParameterValues() {
		if !wantParams[name] {
			t.Errorf("executor output sets parameter %q, which component.yaml does not declare", name)
		}
	}
	for name := range out.GetArtifacts() {
		if !wantArtifacts[name] {
			t.Errorf("executor output records artifact %q, which component.yaml does not declare", name)
		}
	}
	skip := map[string]bool{}
	for _, n := range noFile {
		skip[n] = true
	}
	for _, name := range sortedKeys(wantParams) {
		if _, ok := out.GetParameterValues()[name]; !ok {
			t.Errorf("declared output parameter %q is not in the executor output", name)
		}
		if _, err := os.Stat(filepath.Join(dir, "parameters", name)); err != nil {
			t.Errorf("declared output parameter %q has no output file: %v", name, err)
		}
	}
	for _, name := range sortedKeys(wantArtifacts) {
		l, ok := out.GetArtifacts()[name]
		if !ok || len(l.GetArtifacts()) == 0 {
			t.Errorf("declared output artifact %q is not in the executor output", name)
			continue
		}
		if l.GetArtifacts()[0].GetUri() != "" || skip[name] {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, "artifacts", name)); err != nil || st.Size() == 0 {
			t.Errorf("declared output artifact %q keeps its URI but its file is missing or empty (%v)", name, err)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
