package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/crdschema"
)

// On a cluster whose Kubeflow Trainer predates v2.2 (Kubeflow 1.11 ships v2.1.0), the TrainJob API
// has no spec.runtimePatches and the API server prunes it without an error: launch-xgboostjob
// with job_api trainjob is refused before any TrainJob exists, saying why and what to use. The
// TrainJob CRD here is Trainer v2.2.0's without that field, as v2.1's is.
func TestTrainJobRefusedOnTrainerWithoutRuntimePatches(t *testing.T) {
	e := newEnv(t, "trainer21")
	ctx := context.Background()
	file, err := crdschema.ModuleFile("github.com/kubeflow/trainer/v2", "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		delete(spec.Properties, "runtimePatches")
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if err := e.c.Client.Create(ctx, &crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Client.Delete(context.Background(), &crd) })
	backend, err := kube.New(e.c.Config, launch.APITrainJob)
	if err != nil {
		t.Fatal(err)
	}
	id := launch.Identity{RunID: "run-21", TaskName: "train-iris"}
	j := &launch.Job{
		API: launch.APITrainJob, TrainingRuntime: launch.DefaultTrainingRuntime, Name: launch.JobName(id), Namespace: e.ns, Identity: id,
		Image: "ghcr.io/gangboost/gangboost:test", Workers: 2, Data: launch.Data{Dataset: "iris"},
		Resources: launch.Resources{CPU: "1", Memory: "1Gi"}, Claim: claimName, MountPath: "/mnt/pvc",
		ModelName: "iris", ModelVersion: "v1", Port: 9999, Gang: launch.Gang{Queue: mlQueue},
	}
	// The API server serves the new CRD a moment after it is created.
	var startErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, startErr = backend.Start(ctx, j)
		return startErr == nil || strings.Contains(startErr.Error(), "runtimePatches"), nil
	}); err != nil {
		t.Fatalf("Start never reached the TrainJob API: %v", startErr)
	}
	for _, want := range []string{"dropped the TrainJob's spec.runtimePatches", "no TrainJob was created", "job_api xgboostjob", "v2.2"} {
		if startErr == nil || !strings.Contains(startErr.Error(), want) {
			t.Errorf("Start on Trainer without runtimePatches: %v; want it to say %q", startErr, want)
		}
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(trainer.SchemeGroupVersion.WithKind("TrainJobList"))
	if err := e.c.Client.List(ctx, &list, client.InNamespace(e.ns)); err != nil || len(list.Items) > 0 {
		t.Errorf("TrainJobs after the refusal: %d (%v), want none", len(list.Items), err)
	}
}
