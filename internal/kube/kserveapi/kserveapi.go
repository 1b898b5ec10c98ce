// Package kserveapi is the part of KServe's serving.kserve.io/v1beta1 InferenceService API that
// the deploy step writes and reads, as Go types whose JSON is KServe's own.
//
// KServe's API package (github.com/kserve/kserve/pkg/apis/serving/v1beta1) imports its storage
// initializer and, with it, the S3, GCS and Azure SDKs: 54 of the 97 MB the deploy step weighed
// with it, in a step that never downloads a model. These types carry only the fields gangboost
// sets or reads; the tests in test/kservetypes hold every one of them to KServe's Go types (same JSON names
// and shapes, decoded strictly) and its constants to KServe's, so a KServe upgrade that moves a
// field fails there.
package kserveapi

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is KServe's serving API group at v1beta1.
var SchemeGroupVersion = schema.GroupVersion{Group: "serving.kserve.io", Version: "v1beta1"}

// KServe's names that the deploy step relies on (github.com/kserve/kserve/pkg/constants).
const (
	// ContainerName is the predictor's serving container.
	ContainerName = "kserve-container"
	// PodLabel is KServe's label on an InferenceService's pods; its value is the service's name.
	PodLabel = "serving.kserve.io/inferenceservice"
	// SourceURIAnnotation is where KServe records a predictor pod's storageUri.
	SourceURIAnnotation = "internal.serving.kserve.io/storage-initializer-sourceuri"
	// DeploymentModeAnnotation chooses, per InferenceService, how KServe deploys the predictor
	// (RawDeployment: a Deployment and a Service; Serverless: a Knative Service), over the
	// cluster's defaultDeploymentMode.
	DeploymentModeAnnotation = "serving.kserve.io/deploymentMode"
)

// AddToScheme registers InferenceService and InferenceServiceList under SchemeGroupVersion.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &InferenceService{}, &InferenceServiceList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// InferenceService is a serving.kserve.io/v1beta1 InferenceService.
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InferenceServiceSpec   `json:"spec,omitempty"`
	Status InferenceServiceStatus `json:"status,omitempty"`
}

// InferenceServiceList is a list of InferenceServices (what an informer lists).
type InferenceServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []InferenceService `json:"items"`
}

// InferenceServiceSpec is spec: the predictor, and the canaries beside it (KServe v0.20).
type InferenceServiceSpec struct {
	Predictor PredictorSpec `json:"predictor"`
	// Canary are predictors deployed beside the stable one, each its own Deployment and
	// Service {isvc}-{predictor.name}-predictor, with a share of the traffic (0: dark).
	// Promotion sets spec.predictor to a canary's (its name included) and drops the entry; its
	// pods serve on without a restart.
	Canary []CanarySpec `json:"canary,omitempty"`
}

// PredictorSpec is spec.predictor: its name (which names its Deployment and Service), the model,
// the replicas and annotations (KServe's ComponentExtensionSpec, inline) and the pods' security
// context.
type PredictorSpec struct {
	// Name names the predictor's Deployment and Service ({isvc}-{name}-predictor; empty:
	// {isvc}-predictor); a canary's is required.
	Name        string     `json:"name,omitempty"`
	Model       *ModelSpec `json:"model,omitempty"`
	MinReplicas *int32     `json:"minReplicas,omitempty"`
	MaxReplicas int32      `json:"maxReplicas,omitempty"`
	// Annotations go onto the predictor's pods (over the InferenceService's own).
	Annotations map[string]string `json:"annotations,omitempty"`
	// SecurityContext is the predictor pods' (KServe's PodSpec, inline).
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// ServiceAccountName is the predictor pods' (KServe's PodSpec, inline): KServe gives the
	// storage initializer the S3 credentials of the Secrets it names.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// PriorityClassName is the predictor pods' (KServe's PodSpec, inline), e.g. gangboost-serving,
	// which outranks gang-scheduled training (operator-config/volcano).
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// CanarySpec is one entry of spec.canary.
type CanarySpec struct {
	Predictor      PredictorSpec `json:"predictor"`
	TrafficPercent int32         `json:"trafficPercent"`
}

// ModelSpec is spec.predictor.model. Its fields are in KServe's order and Name keeps KServe's
// JSON (an inline corev1.Container whose name has no omitempty), so the spec marshals to the
// same bytes as KServe's ModelSpec: the deploy step's serving digest is taken over them.
type ModelSpec struct {
	ModelFormat ModelFormat `json:"modelFormat"`
	Runtime     *string     `json:"runtime,omitempty"`
	StorageURI  *string     `json:"storageUri,omitempty"`
	// ProtocolVersion is "v1", "v2" or "grpc-v2".
	ProtocolVersion *string `json:"protocolVersion,omitempty"`
	// Name is the model container's name (empty: KServe names it ContainerName).
	Name string `json:"name"`
	// Args are the model container's arguments, which KServe appends to its runtime's (e.g.
	// --enable_batching for gangboost-runtime).
	Args      []string                    `json:"args,omitempty"`
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// ModelFormat is the format a ServingRuntime must declare to serve the model.
type ModelFormat struct {
	Name string `json:"name"`
}

// InferenceServiceStatus is status: conditions (Knative's duck type), addresses and the model's
// state.
type InferenceServiceStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
	// Address.URL is the in-cluster URL.
	Address *Addressable `json:"address,omitempty"`
	// URL is the external URL.
	URL         string      `json:"url,omitempty"`
	ModelStatus ModelStatus `json:"modelStatus,omitempty"`
	// DeploymentMode is how KServe deployed the predictor (Standard/RawDeployment, Serverless).
	DeploymentMode string `json:"deploymentMode,omitempty"`
	// ClusterServingRuntimeName is the ClusterServingRuntime KServe chose for the model.
	ClusterServingRuntimeName string `json:"clusterServingRuntimeName,omitempty"`
	// CanaryStatuses say which canaries have an available replica.
	CanaryStatuses []CanaryStatus `json:"canaryStatuses,omitempty"`
}

// CanaryStatus is a canary's observed state.
type CanaryStatus struct {
	Name           string `json:"name"`
	Ready          bool   `json:"ready"`
	TrafficPercent int32  `json:"trafficPercent"`
}

// Condition is a Knative condition.
type Condition struct {
	Type    string                 `json:"type"`
	Status  corev1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
}

// Addressable is Knative's duck-typed address.
type Addressable struct {
	URL string `json:"url,omitempty"`
}

// IsReady reports whether the Ready condition is True: KServe's living condition set is happy.
func (s *InferenceServiceStatus) IsReady() bool {
	for _, c := range s.Conditions {
		if c.Type == "Ready" {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TransitionStatus is the model's rollout state.
type TransitionStatus string

// The transition states the deploy step acts on.
const (
	// InvalidSpec: KServe rejects the predictor spec.
	InvalidSpec TransitionStatus = "InvalidSpec"
	// BlockedByFailedLoad: the model failed to load.
	BlockedByFailedLoad TransitionStatus = "BlockedByFailedLoad"
)

// FailureReason is why the model last failed (status.modelStatus.lastFailureInfo.reason).
type FailureReason = string

// The failure reasons KServe writes that gangboost's checks look for.
const (
	// ModelLoadFailed: the runtime exited while loading the model.
	ModelLoadFailed FailureReason = "ModelLoadFailed"
	// NoSupportingRuntime: no serving runtime supports the model's format and protocol.
	NoSupportingRuntime FailureReason = "NoSupportingRuntime"
)

// ModelStatus is status.modelStatus.
type ModelStatus struct {
	TransitionStatus    TransitionStatus     `json:"transitionStatus"`
	ModelRevisionStates *ModelRevisionStates `json:"states,omitempty"`
	LastFailureInfo     *FailureInfo         `json:"lastFailureInfo,omitempty"`
	ModelCopies         *ModelCopies         `json:"copies,omitempty"`
}

// ModelRevisionStates are the active and target model revisions' states.
type ModelRevisionStates struct {
	ActiveModelState string `json:"activeModelState"`
	TargetModelState string `json:"targetModelState,omitempty"`
}

// FailureInfo is why the model last failed; for a runtime that exited, its termination message.
type FailureInfo struct {
	Location string `json:"location,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode int32  `json:"exitCode,omitempty"`
}

// ModelCopies counts the model's copies.
type ModelCopies struct {
	FailedCopies int `json:"failedCopies"`
	TotalCopies  int `json:"totalCopies,omitempty"`
}

// DeepCopyObject is runtime.Object's copy.
func (in *InferenceService) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return in.DeepCopy()
}

// DeepCopy copies the service; the copy shares no memory with it.
func (in *InferenceService) DeepCopy() *InferenceService {
	if in == nil {
		return nil
	}
	out := &InferenceService{TypeMeta: in.TypeMeta}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Predictor = in.Spec.Predictor.DeepCopy()
	if in.Spec.Canary != nil {
		out.Spec.Canary = make([]CanarySpec, len(in.Spec.Canary))
		for i, c := range in.Spec.Canary {
			out.Spec.Canary[i] = CanarySpec{Predictor: c.Predictor.DeepCopy(), TrafficPercent: c.TrafficPercent}
		}
	}
	st := in.Status
	out.Status = InferenceServiceStatus{
		Conditions: append([]Condition(nil), st.Conditions...),
		Address:    copyPtr(st.Address),
		URL:        st.URL,
		ModelStatus: ModelStatus{
			TransitionStatus:    st.ModelStatus.TransitionStatus,
			ModelRevisionStates: copyPtr(st.ModelStatus.ModelRevisionStates),
			LastFailureInfo:     copyPtr(st.ModelStatus.LastFailureInfo),
			ModelCopies:         copyPtr(st.ModelStatus.ModelCopies),
		},
		DeploymentMode:            st.DeploymentMode,
		ClusterServingRuntimeName: st.ClusterServingRuntimeName,
		CanaryStatuses:            append([]CanaryStatus(nil), st.CanaryStatuses...),
	}
	return out
}

// DeepCopy copies a predictor spec; the copy shares no memory with it.
func (p PredictorSpec) DeepCopy() PredictorSpec {
	out := PredictorSpec{Name: p.Name, MinReplicas: copyPtr(p.MinReplicas), MaxReplicas: p.MaxReplicas, SecurityContext: p.SecurityContext.DeepCopy(),
		ServiceAccountName: p.ServiceAccountName, PriorityClassName: p.PriorityClassName}
	if p.Annotations != nil {
		out.Annotations = make(map[string]string, len(p.Annotations))
		for k, v := range p.Annotations {
			out.Annotations[k] = v
		}
	}
	if m := p.Model; m != nil {
		c := *m
		c.Runtime, c.StorageURI, c.ProtocolVersion = copyPtr(m.Runtime), copyPtr(m.StorageURI), copyPtr(m.ProtocolVersion)
		c.Args = slices.Clone(m.Args)
		m.Resources.DeepCopyInto(&c.Resources)
		out.Model = &c
	}
	return out
}

// DeepCopyObject is runtime.Object's copy.
func (in *InferenceServiceList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &InferenceServiceList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]InferenceService, len(in.Items))
		for i := range in.Items {
			out.Items[i] = *in.Items[i].DeepCopy()
		}
	}
	return out
}

// copyPtr copies what p points to (a struct of values, or a value).
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
