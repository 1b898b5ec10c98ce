package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/launch"
)

var update = flag.Bool("update", false, "rewrite component.yaml from launch.Inputs")

const componentName = "launch-xgboostjob"

// componentSpec is the component as KFP's SDK compiles a single component: PipelineSpec IR with one
// task that passes every input through.
func componentSpec(t *testing.T) *pipelinespec.PipelineSpec {
	t.Helper()
	inputs := &pipelinespec.ComponentInputsSpec{Parameters: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{}}
	taskInputs := &pipelinespec.TaskInputsSpec{Parameters: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{}}
	for _, in := range launch.Inputs {
		ps := &pipelinespec.ComponentInputsSpec_ParameterSpec{
			ParameterType: pipelinespec.ParameterType_ParameterTypeEnum(pipelinespec.ParameterType_ParameterTypeEnum_value[string(in.Type)]),
			Description:   in.Description,
		}
		if in.Default != nil {
			v, err := structpb.NewValue(in.Default)
			if err != nil {
				t.Fatalf("input %s default: %v", in.Name, err)
			}
			ps.DefaultValue, ps.IsOptional = v, true
		}
		inputs.Parameters[in.Name] = ps
		taskInputs.Parameters[in.Name] = &pipelinespec.TaskInputsSpec_InputParameterSpec{
			Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter{ComponentInputParameter: in.Name},
		}
	}
	artifact := func(title string) *pipelinespec.ComponentOutputsSpec_ArtifactSpec {
		return &pipelinespec.ComponentOutputsSpec_ArtifactSpec{ArtifactType: &pipelinespec.ArtifactTypeSchema{
			Kind: &pipelinespec.ArtifactTypeSchema_SchemaTitle{SchemaTitle: title}, SchemaVersion: "0.0.1"}}
	}
	str := &pipelinespec.ComponentOutputsSpec_ParameterSpec{ParameterType: pipelinespec.ParameterType_STRING}
	outputs := &pipelinespec.ComponentOutputsSpec{
		Artifacts: map[string]*pipelinespec.ComponentOutputsSpec_ArtifactSpec{
			launch.OutputModel: artifact("system.Model"), launch.OutputMetrics: artifact("system.Metrics"),
		},
		Parameters: map[string]*pipelinespec.ComponentOutputsSpec_ParameterSpec{launch.OutputModelURI: str, launch.OutputJobName: str},
	}
	deployment, err := structpb.NewStruct(map[string]any{"executors": map[string]any{"exec-" + componentName: map[string]any{
		"container": map[string]any{
			"image": image,
			// Only {{$}} is replaced inside command; the component needs nothing else.
			"command": []any{componentName, "--executor-input", "{{$}}"},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	outArtifacts := map[string]*pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{}
	for name := range outputs.Artifacts {
		outArtifacts[name] = &pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{ArtifactSelectors: []*pipelinespec.DagOutputsSpec_ArtifactSelectorSpec{
			{ProducerSubtask: componentName, OutputArtifactKey: name}}}
	}
	outParams := map[string]*pipelinespec.DagOutputsSpec_DagOutputParameterSpec{}
	for name := range outputs.Parameters {
		outParams[name] = &pipelinespec.DagOutputsSpec_DagOutputParameterSpec{Kind: &pipelinespec.DagOutputsSpec_DagOutputParameterSpec_ValueFromParameter{
			ValueFromParameter: &pipelinespec.DagOutputsSpec_ParameterSelectorSpec{ProducerSubtask: componentName, OutputParameterKey: name}}}
	}
	return &pipelinespec.PipelineSpec{
		PipelineInfo: &pipelinespec.PipelineInfo{Name: componentName,
			Description: "Trains an XGBoost model as a gang-scheduled XGBoostJob (Training Operator v1 + Volcano) and outputs it as a Model artifact and model_uri."},
		SchemaVersion: "2.1.0",
		SdkVersion:    "kfp-2.14.3",
		Components: map[string]*pipelinespec.ComponentSpec{"comp-" + componentName: {
			InputDefinitions: inputs, OutputDefinitions: outputs,
			Implementation: &pipelinespec.ComponentSpec_ExecutorLabel{ExecutorLabel: "exec-" + componentName},
		}},
		DeploymentSpec: deployment,
		Root: &pipelinespec.ComponentSpec{
			InputDefinitions: inputs, OutputDefinitions: outputs,
			Implementation: &pipelinespec.ComponentSpec_Dag{Dag: &pipelinespec.DagSpec{
				Outputs: &pipelinespec.DagOutputsSpec{Artifacts: outArtifacts, Parameters: outParams},
				Tasks: map[string]*pipelinespec.PipelineTaskSpec{componentName: {
					TaskInfo:       &pipelinespec.PipelineTaskInfo{Name: componentName},
					ComponentRef:   &pipelinespec.ComponentRef{Name: "comp-" + componentName},
					Inputs:         taskInputs,
					CachingOptions: &pipelinespec.PipelineTaskSpec_CachingOptions{EnableCache: false},
				}},
			}},
		},
	}
}

// TestComponentYAML: component.yaml is the IR generated from launch.Inputs (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	js, err := protojson.MarshalOptions{Multiline: false}.Marshal(componentSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("# PIPELINE DEFINITION\n# Name: "+componentName+"\n# Generated from internal/launch.Inputs: go test ./components/launch-xgboostjob -update\n"), y...)
	if *update {
		if err := os.WriteFile("component.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("component.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("component.yaml differs from launch.Inputs; run go test ./components/launch-xgboostjob -update")
	}
	gotJSON, err := yaml.YAMLToJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	var spec pipelinespec.PipelineSpec
	if err := protojson.Unmarshal(gotJSON, &spec); err != nil {
		t.Fatalf("component.yaml is not a PipelineSpec (strict): %v", err)
	}
	exec := spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()["exec-"+componentName].GetStructValue().GetFields()["container"].GetStructValue()
	for _, v := range exec.GetFields()["command"].GetListValue().GetValues() {
		if s := v.GetStringValue(); strings.Contains(s, "{{") && s != "{{$}}" {
			t.Errorf("command has placeholder %q: only {{$}} is replaced in command", s)
		}
	}
	if img := exec.GetFields()["image"].GetStringValue(); img != image {
		t.Errorf("image = %q, want %s", img, image)
	}
	if strings.Contains(string(got), "concat") || strings.Contains(string(got), "IfPresent") {
		t.Error("component.yaml uses Concat or IfPresent, which KFP's launcher does not resolve")
	}
}

// TestDefaultsMakeAJob: the ExecutorInput KFP builds from component.yaml's defaults and the
// required inputs is a valid job.
func TestDefaultsMakeAJob(t *testing.T) {
	params := map[string]any{"run_id": "0b7c3f8e-6b1e-4a51-a1e4-6d2f0f1c9a10", "task_name": "launch-xgboostjob", "model_name": "iris", "dataset": "iris"}
	for _, in := range launch.Inputs {
		if _, set := params[in.Name]; !set && in.Default != nil {
			params[in.Name] = in.Default
		}
	}
	s, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	in := &pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: s.GetFields()}}
	b, err := protojson.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kfp.ParseExecutorInput(b)
	if err != nil {
		t.Fatal(err)
	}
	j, local, err := launch.JobFromExecutor(e, launch.Defaults{Namespace: "kubeflow-user", Image: image})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	if local != "/mnt/pvc" || j.Workers != 1 || j.Gang.Queue != "ml-training" || j.Image != image {
		t.Errorf("job from defaults = %+v (local %s)", j, local)
	}
	if j.ModelURI() != "pvc://gangboost-models/models/iris/v1" {
		t.Errorf("model URI = %s", j.ModelURI())
	}
}
