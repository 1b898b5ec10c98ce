package gangenv_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	"github.com/kubeflow/trainer/v2/pkg/runtime/framework/plugins/xgboost"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gangboost/gangboost/internal/steps/launch"
	launchkube "github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/internal/training/gangenv"
)

// TestReadsTrainerV2XGBoostPlugin: the environment Kubeflow Trainer v2.2's own XGBoost plugin
// (mlPolicy.xgboost) gives each node of the TrainJob launch builds, resolved per pod as the
// kubelet does (DMLC_TASK_ID is the Job completion index), is read by the trainer as a gang of
// numNodes ranks whose rank 0 runs the tracker on the host and port every rank dials.
func TestReadsTrainerV2XGBoostPlugin(t *testing.T) {
	id := launch.Identity{RunID: "run-1", TaskName: "train"}
	j := &launch.Job{
		API: launch.APITrainJob, TrainingRuntime: launch.DefaultTrainingRuntime, Name: launch.JobName(id), Namespace: "ml", Identity: id,
		Image: "gangboost-trainer:0.1.0", Workers: 2, Data: launch.Data{Dataset: "iris"}, Resources: launch.Resources{CPU: "1", Memory: "1Gi"},
		Claim: "gangboost-models", MountPath: "/mnt/pvc", ModelName: "iris", ModelVersion: "v1", Gang: launch.Gang{Queue: "ml-training"},
	}
	tj, err := launchkube.TrainJob(j)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime as manifests/trainingruntime.yaml declares it: mlPolicy.xgboost, a "node"
	// replicated job whose container is "node".
	info := trainerruntime.NewInfo(
		trainerruntime.WithMLPolicySource(&trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{XGBoost: &trainer.XGBoostMLPolicySource{}}}),
		trainerruntime.WithPodSet(trainerconstants.Node, &[]string{trainerconstants.AncestorTrainer}[0], 1, corev1.PodSpec{},
			corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName(launchkube.TrainerNode))),
	)
	plugin := &xgboost.XGBoost{}
	if _, errs := plugin.Validate(context.Background(), info, nil, tj); len(errs) > 0 {
		t.Fatalf("Trainer's XGBoost plugin rejects the TrainJob: %v", errs)
	}
	if err := plugin.EnforceMLPolicy(info, tj); err != nil {
		t.Fatal(err)
	}
	c := info.FindContainerByPodSetAncestorContainerName(trainerconstants.AncestorTrainer, launchkube.TrainerNode)
	if c == nil || len(c.Env) == 0 {
		t.Fatalf("the plugin injected nothing into container %q", launchkube.TrainerNode)
	}
	nodes := int(*tj.Spec.Trainer.NumNodes)
	for rank := range nodes {
		var env []string
		for _, e := range c.Env {
			switch {
			case e.Value != nil:
				env = append(env, *e.Name+"="+*e.Value)
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && *e.ValueFrom.FieldRef.FieldPath == trainerconstants.JobCompletionIndexFieldPath:
				env = append(env, *e.Name+"="+strconv.Itoa(rank))
			default:
				t.Fatalf("env %s: a source this test does not resolve", *e.Name)
			}
		}
		got, err := gangenv.Read(gangenv.Lookup(env))
		if err != nil {
			t.Fatalf("rank %d, env %v: %v", rank, env, err)
		}
		want := gangenv.Cluster{Rank: rank, WorldSize: nodes, TrackerHost: fmt.Sprintf("%s-node-0-0.%s", j.Name, j.Name),
			TrackerPort: int(launchkube.TrainerTrackerPort), Source: gangenv.SourceTrainerV2}
		if got != want {
			t.Errorf("rank %d from %v:\n got %+v\nwant %+v", rank, env, got, want)
		}
	}
}
