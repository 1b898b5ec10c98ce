package pipelines

import (
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/launch"
)

// TestLaunchGetsAValidJob: with the pipeline's defaults and prepare-data's outputs, the
// launch step's ExecutorInput makes a valid XGBoostJob on the claim, with the run's identity.
func TestLaunchGetsAValidJob(t *testing.T) {
	spec := parseCommitted(t).Spec
	rv := RunValues{
		Parameters: map[string]*structpb.Value{"workers": structpb.NewNumberValue(3), "max_depth": structpb.NewStringValue("4")},
		Outputs: map[string]map[string]*structpb.Value{PrepareData: {
			"train_path":  structpb.NewStringValue("datasets/iris/train.csv"),
			"test_path":   structpb.NewStringValue("datasets/iris/test.csv"),
			"schema_path": structpb.NewStringValue("datasets/iris/schema.json"),
			"label":       structpb.NewStringValue("species"),
		}},
		Placeholders: map[string]string{"{{$.pipeline_job_uuid}}": "0b7c3f8e-6b1e-4a51-a1e4-6d2f0f1c9a10", "{{$.pipeline_task_name}}": Launch},
	}
	values, err := TaskInputs(spec, Launch, rv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.Marshal(&pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: values}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kfp.ParseExecutorInput(b)
	if err != nil {
		t.Fatal(err)
	}
	j, local, err := launch.JobFromExecutor(e, launch.Defaults{Namespace: "team-a", Image: "ghcr.io/gangboost/gangboost:0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	if j.Workers != 3 || j.Claim != "gangboost-models" || j.MountPath != "/mnt/pvc" || local != "/mnt/pvc" ||
		j.Data.Train != "datasets/iris/train.csv" || j.Data.Eval != "datasets/iris/test.csv" || j.Data.Schema != "datasets/iris/schema.json" ||
		j.Identity.RunID != "0b7c3f8e-6b1e-4a51-a1e4-6d2f0f1c9a10" || j.Identity.TaskName != Launch {
		t.Errorf("job = %+v (local %s)", j, local)
	}
	if u, err := j.ModelURI(); err != nil || u != "pvc://gangboost-models/models/iris/run-0b7c3f8e" {
		t.Errorf("model URI = %s, %v", u, err)
	}
	flags := map[string]string{}
	for i := 0; i+1 < len(j.TrainerFlags); i += 2 {
		flags[j.TrainerFlags[i]] = j.TrainerFlags[i+1]
	}
	for _, v := range flags {
		if v == "" {
			t.Errorf("trainer flags %v pass an empty value", j.TrainerFlags)
		}
	}
	if len(j.TrainerFlags) == 0 {
		t.Error("no trainer flags")
	}
	t.Logf("trainer flags: %v", j.TrainerFlags)
}

// TestTaskInputsNeedUpstreamOutputs: a task whose producer has not output is not resolved.
func TestTaskInputsNeedUpstreamOutputs(t *testing.T) {
	spec := parseCommitted(t).Spec
	if _, err := TaskInputs(spec, Evaluate, RunValues{}); err == nil {
		t.Error("evaluate resolved without deploy's outputs")
	}
	in, err := TaskInputs(spec, PrepareData, RunValues{Parameters: map[string]*structpb.Value{"dataset": structpb.NewStringValue("datasets/raw/houses.csv")}})
	if err != nil {
		t.Fatal(err)
	}
	if in["dataset"].GetStringValue() != "datasets/raw/houses.csv" || in["name"].GetStringValue() != "iris" || in["pvc_mount_path"].GetStringValue() != "/mnt/pvc" || in["test_fraction"].GetNumberValue() != 0.2 {
		t.Errorf("prepare-data inputs = %v", in)
	}
}
