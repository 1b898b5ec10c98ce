// Package kube is the deployer's Kubernetes backend: it serves a deploy.Service as a KServe
// InferenceService (modelFormat xgboost on the gangboost runtime, V2 protocol, storageUri on the
// claim), created or updated by server-side apply, and follows it, its predictor pods and their
// events through informers until it serves the applied model.
package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

// Labels and annotations the backend puts on its InferenceServices.
const (
	// ModelURIAnnotation and RunIDAnnotation record which model, deployed by which run, a
	// predictor serves. They, ModelSHA256Annotation and ServingSpecAnnotation are the
	// predictor's own annotations (spec.predictor.annotations, and a canary's), not the
	// InferenceService's: KServe copies the service's annotations into every predictor's pods,
	// stable and canary alike, so a model's annotations there would restart the champion's pods
	// when a challenger is added or promoted.
	ModelURIAnnotation = "gangboost.dev/model-uri"
	RunIDAnnotation    = "gangboost.dev/run-id"
	// ModelSHA256Annotation is the served model file's sha256: a version replaced on purpose
	// under the same model URI changes it, and so rolls the pods onto the new bytes.
	ModelSHA256Annotation = "gangboost.dev/model-sha256"
	// ServingSpecAnnotation is a digest of what the predictor serves (the model spec and the
	// annotations above, not the replicas). KServe copies the predictor's annotations into its
	// pods, so a pod carrying the applied digest is of the applied version.
	ServingSpecAnnotation = "gangboost.dev/serving-spec"
	// PreviousModelURIAnnotation is, on a challenger's predictor, the champion it would replace;
	// promoted, the predictor keeps it: the model a rollback returns to.
	PreviousModelURIAnnotation = "gangboost.dev/previous-model-uri"
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	PartOfLabel                = "app.kubernetes.io/part-of"
	ManagedBy                  = "gangboost-deploy-inferenceservice"
	// FieldManager owns the fields the component applies (server-side apply).
	FieldManager = "gangboost-deploy-inferenceservice"
	// ModelFormat is the format the gangboost runtimes declare.
	ModelFormat = "xgboost"
	// ContainerName is the predictor's serving container.
	ContainerName = kserveapi.ContainerName
	// PodLabel is KServe's label on an InferenceService's pods (its value the service's name).
	PodLabel = kserveapi.PodLabel
	// SourceURIAnnotation is where KServe records a predictor pod's storageUri: the pods of the
	// applied model carry the model_uri.
	SourceURIAnnotation = kserveapi.SourceURIAnnotation
	// DeploymentModeAnnotation is the service's deployment mode, over the cluster's default.
	DeploymentModeAnnotation = kserveapi.DeploymentModeAnnotation
)

// InferenceService builds the serving.kserve.io/v1beta1 InferenceService of a service:
// predictor.model {modelFormat xgboost, runtime, protocolVersion, storageUri = model_uri,
// resources requests = limits}, minReplicas and maxReplicas.
func InferenceService(s *deploy.Service) (*kserveapi.InferenceService, error) {
	res := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: s.CPU, corev1.ResourceMemory: s.Memory} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, v, err)
		}
		res[name] = q
	}
	annotations := map[string]string{ModelURIAnnotation: s.ModelURI}
	if s.RunID != "" {
		annotations[RunIDAnnotation] = s.RunID
	}
	if s.ModelSHA256 != "" {
		annotations[ModelSHA256Annotation] = s.ModelSHA256
	}
	var serviceAnnotations map[string]string
	if s.DeploymentMode != "" {
		serviceAnnotations = map[string]string{DeploymentModeAnnotation: s.DeploymentMode}
	}
	var security *corev1.PodSecurityContext
	if s.FSGroup != nil || s.RunAsUser != nil || s.RunAsGroup != nil {
		security = &corev1.PodSecurityContext{FSGroup: copyID(s.FSGroup), RunAsUser: copyID(s.RunAsUser), RunAsGroup: copyID(s.RunAsGroup)}
	}
	runtime, protocol, uri := s.Runtime, s.ProtocolVersion, s.ModelURI
	model := &kserveapi.ModelSpec{
		ModelFormat:     kserveapi.ModelFormat{Name: ModelFormat},
		Runtime:         &runtime,
		StorageURI:      &uri,
		ProtocolVersion: &protocol,
		Resources:       corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
	}
	if len(s.RuntimeArgs) > 0 {
		model.Args = slices.Clone(s.RuntimeArgs)
	}
	digest, err := json.Marshal(struct {
		Model       *kserveapi.ModelSpec       `json:"model"`
		Annotations map[string]string          `json:"annotations"`
		Security    *corev1.PodSecurityContext `json:"securityContext,omitempty"`
		Mode        string                     `json:"deploymentMode,omitempty"`
		Account     string                     `json:"serviceAccountName,omitempty"`
		Priority    string                     `json:"priorityClassName,omitempty"`
	}{model, annotations, security, s.DeploymentMode, s.ServiceAccount, s.PriorityClass})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(digest)
	annotations[ServingSpecAnnotation] = hex.EncodeToString(sum[:8])
	minReplicas := s.MinReplicas
	isvc := &kserveapi.InferenceService{
		TypeMeta: metav1.TypeMeta{APIVersion: kserveapi.SchemeGroupVersion.String(), Kind: "InferenceService"},
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace,
			Labels:      map[string]string{ManagedByLabel: ManagedBy, PartOfLabel: "gangboost"},
			Annotations: serviceAnnotations,
		},
		Spec: kserveapi.InferenceServiceSpec{Predictor: kserveapi.PredictorSpec{
			Model: model, MinReplicas: &minReplicas, MaxReplicas: s.MaxReplicas, Annotations: annotations, SecurityContext: security,
			ServiceAccountName: s.ServiceAccount, PriorityClassName: s.PriorityClass,
		}},
	}
	return isvc, nil
}

// ApplyConfiguration is the InferenceService as a server-side apply request: only the fields the
// component sets. The typed struct also carries zero values of fields without omitempty (the
// model container's name, an empty status), which would otherwise become fields this manager
// owns and resets on every apply.
func ApplyConfiguration(isvc *kserveapi.InferenceService) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(isvc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	pruned, _ := prune(obj).(map[string]any)
	return &unstructured.Unstructured{Object: pruned}, nil
}

// prune drops nulls, empty strings and empty objects and lists.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := prune(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		out := t[:0]
		for _, e := range t {
			if p := prune(e); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if t == "" {
			return nil
		}
		return t
	default:
		return v
	}
}

func copyID(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
