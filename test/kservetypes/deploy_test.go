package kservetypes

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/steps/deploy"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
)

// asKServe decodes v into KServe's InferenceService strictly: a field KServe does not know fails.
func asKServe(t *testing.T, v any) *v1beta1.InferenceService {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var theirs v1beta1.InferenceService
	if err := yaml.UnmarshalStrict(b, &theirs); err != nil {
		t.Fatalf("not a KServe InferenceService: %v\n%s", err, b)
	}
	return &theirs
}

// The deploy step's InferenceService, and the apply configuration it sends, are InferenceServices
// to KServe's own types, and KServe's accessors read the protocol and storage URI it meant.
func TestDeployInferenceServiceIsKServes(t *testing.T) {
	built, err := deploykube.InferenceService(&deploy.Service{
		Name: "iris", Namespace: "kubeflow-user", ModelURI: "pvc://gangboost-models/models/iris/v2",
		Claim: "gangboost-models", ModelPath: "models/iris/v2", MountPath: "/mnt/pvc",
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "500m", Memory: "1Gi",
		MinReplicas: 1, MaxReplicas: 3, Timeout: time.Minute, RunID: "0b7c3f8e",
		DeploymentMode: "RawDeployment", FSGroup: ptr(int64(65532)),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := asKServe(t, built).Spec.Predictor.Model
	if got := m.GetProtocol(); got != "v2" {
		t.Errorf("protocol = %s", got)
	}
	if got := m.GetStorageUri(); got == nil || *got != "pvc://gangboost-models/models/iris/v2" {
		t.Errorf("storage URI = %v", got)
	}
	u, err := deploykube.ApplyConfiguration(built)
	if err != nil {
		t.Fatal(err)
	}
	ext := asKServe(t, u.Object).Spec.Predictor.ComponentExtensionSpec
	if ext.MinReplicas == nil || *ext.MinReplicas != 1 || ext.MaxReplicas != 3 {
		t.Errorf("replicas = %v-%d", ext.MinReplicas, ext.MaxReplicas)
	}
}
