package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
)

// On a cluster whose KServe predates canary predictors (v0.20; Kubeflow 1.11 ships v0.15), the
// InferenceService API has no spec.canary and the API server prunes it without an error: a
// challenger is refused with the reason and the way out, and the champion's spec is unchanged.
// The CRD here is KServe v0.20.0's with spec.canary removed, as v0.15's lacks it.
func TestChallengerRefusedOnKServeWithoutCanary(t *testing.T) {
	e := newEnv(t, "kserve15")
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	key := client.ObjectKey{Name: "inferenceservices.serving.kserve.io"}
	if err := e.c.Client.Get(ctx, key, &crd); err != nil {
		t.Fatal(err)
	}
	original := crd.Spec.DeepCopy()
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		delete(spec.Properties, "canary")
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if err := e.c.Client.Update(ctx, &crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var now apiextensionsv1.CustomResourceDefinition
		if err := e.c.Client.Get(context.Background(), key, &now); err == nil {
			now.Spec = *original
			if err := e.c.Client.Update(context.Background(), &now); err != nil {
				t.Errorf("restore the InferenceService CRD: %v", err)
			}
		}
	})
	backend, err := deploykube.New(e.c.Config)
	if err != nil {
		t.Fatal(err)
	}
	service := func(version string) *deploy.Service {
		return &deploy.Service{Name: "iris", Namespace: e.ns, ModelURI: "pvc://" + claimName + "/models/iris/" + version, Claim: claimName,
			ModelPath: "models/iris/" + version, Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "100m", Memory: "128Mi",
			MinReplicas: 1, MaxReplicas: 1, DeploymentMode: "RawDeployment"}
	}
	if err := backend.Apply(ctx, service("v1")); err != nil {
		t.Fatal(err)
	}
	champion := "pvc://" + claimName + "/models/iris/v1"
	c := deploy.Challenger{Name: "v2", Champion: champion}
	// The API server serves the changed schema a moment after the update.
	var applyErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		applyErr = backend.ApplyChallenger(ctx, service("v2"), c)
		if applyErr == nil {
			_ = backend.Reject(ctx, service("v2"), c)
		}
		return applyErr != nil, nil
	}); err != nil {
		t.Fatalf("the challenger was kept beside the champion on an API without spec.canary: %v", applyErr)
	}
	for _, want := range []string{"kept no spec.canary entry v2", "KServe v0.20", "promotion=replace"} {
		if !strings.Contains(applyErr.Error(), want) {
			t.Errorf("ApplyChallenger without spec.canary: %v; want it to say %q", applyErr, want)
		}
	}
	var isvc kserveapi.InferenceService
	if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	if got := *isvc.Spec.Predictor.Model.StorageURI; got != champion || len(isvc.Spec.Canary) != 0 {
		t.Errorf("after the refusal the service serves %s with %d canaries; want %s alone", got, len(isvc.Spec.Canary), champion)
	}
}
