package main

import (
	"flag"
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/launch"
)

var update = flag.Bool("update", false, "rewrite component.yaml from launch.Inputs")

const generator = "internal/steps/launch.Inputs: go test ./components/launch-xgboostjob -update"

// TestComponentYAML: component.yaml is the IR generated from launch.Component (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	kfptest.CheckComponentYAML(t, launch.Component(image), "component.yaml", generator, *update)
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
	if u, err := j.ModelURI(); err != nil || u != "pvc://gangboost-models/models/iris/run-0b7c3f8e" {
		t.Errorf("model URI = %s, %v", u, err)
	}
}
