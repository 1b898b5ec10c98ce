package kservetypes

import (
	"encoding/json"
	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"reflect"
	"testing"

	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"github.com/kserve/kserve/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/yaml"
)

func ptr[T any](v T) *T { return &v }

// full is an kserveapi.InferenceService with every field of these types set.
func full() *kserveapi.InferenceService {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return &kserveapi.InferenceService{
		TypeMeta: metav1.TypeMeta{APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceService"},
		ObjectMeta: metav1.ObjectMeta{Name: "iris", Namespace: "kubeflow-user", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app.kubernetes.io/part-of": "gangboost"}, Annotations: map[string]string{"gangboost.dev/run-id": "r1"}},
		Spec: kserveapi.InferenceServiceSpec{Predictor: kserveapi.PredictorSpec{
			Model: &kserveapi.ModelSpec{
				ModelFormat: kserveapi.ModelFormat{Name: "xgboost"}, Runtime: ptr("gangboost-xgboost"),
				StorageURI: ptr("pvc://gangboost-models/models/iris/v1"), ProtocolVersion: ptr("v2"), Name: kserveapi.ContainerName,
				Args:      []string{"--enable_batching"},
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			},
			Name:        "run-1a2b3c4d",
			MinReplicas: ptr(int32(1)), MaxReplicas: 3,
			Annotations:     map[string]string{"gangboost.dev/model-uri": "pvc://gangboost-models/models/iris/v1"},
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr(int64(65532))}, ServiceAccountName: "models-reader", PriorityClassName: "gangboost-serving",
		},
			Canary: []kserveapi.CanarySpec{{TrafficPercent: 10, Predictor: kserveapi.PredictorSpec{
				Name: "run-5e6f7a8b",
				Model: &kserveapi.ModelSpec{ModelFormat: kserveapi.ModelFormat{Name: "xgboost"}, Runtime: ptr("gangboost-xgboost"),
					StorageURI: ptr("pvc://gangboost-models/models/iris/v2"), ProtocolVersion: ptr("v2"), Name: kserveapi.ContainerName,
					Args: []string{"--enable_batching"}, Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}},
				// Every field set, for the check below (KServe's validation refuses maxReplicas on
				// a canary; its types carry it).
				MinReplicas: ptr(int32(1)), MaxReplicas: 1,
				Annotations:     map[string]string{"gangboost.dev/previous-model-uri": "pvc://gangboost-models/models/iris/v1"},
				SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr(int64(65532))}, ServiceAccountName: "models-reader", PriorityClassName: "gangboost-serving",
			}}},
		},
		Status: kserveapi.InferenceServiceStatus{
			Conditions: []kserveapi.Condition{{Type: "Ready", Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "not yet"}},
			Address:    &kserveapi.Addressable{URL: "http://iris-predictor.kubeflow-user.svc.cluster.local"},
			URL:        "http://iris-kubeflow-user.example.com",
			ModelStatus: kserveapi.ModelStatus{
				TransitionStatus:    kserveapi.BlockedByFailedLoad,
				ModelRevisionStates: &kserveapi.ModelRevisionStates{ActiveModelState: "Loaded", TargetModelState: "FailedToLoad"},
				LastFailureInfo:     &kserveapi.FailureInfo{Location: "iris-predictor-abc", Reason: "ModelLoadFailed", Message: "no model file", ExitCode: 1},
				ModelCopies:         &kserveapi.ModelCopies{FailedCopies: 1, TotalCopies: 2},
			},
			DeploymentMode:            "Standard",
			ClusterServingRuntimeName: "gangboost-xgboost",
			CanaryStatuses:            []kserveapi.CanaryStatus{{Name: "run-5e6f7a8b", Ready: true, TrafficPercent: 10}},
		},
	}
}

// unset lists the fields of v (a struct) left at their zero value, by path; Kubernetes' own
// metadata types are not walked.
func unset(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return unset(v.Elem(), path)
	case reflect.Struct:
		if v.Type().PkgPath() != reflect.TypeOf(kserveapi.InferenceService{}).PkgPath() {
			if v.IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := 0; i < v.NumField(); i++ {
			out = append(out, unset(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		return unset(v.Index(0), path+"[0]")
	default:
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
}

// Every field of these types is KServe's: the service with every field set decodes strictly (no
// unknown field) into KServe's kserveapi.InferenceService, and comes back from KServe's JSON unchanged.
func TestFieldsAreKServes(t *testing.T) {
	in := full()
	if z := unset(reflect.ValueOf(in), "InferenceService"); len(z) > 0 {
		t.Fatalf("the fixture leaves fields unset, so they go unchecked: %v", z)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var theirs v1beta1.InferenceService
	if err := yaml.UnmarshalStrict(b, &theirs); err != nil {
		t.Fatalf("not a KServe InferenceService: %v\n%s", err, b)
	}
	back, err := json.Marshal(&theirs)
	if err != nil {
		t.Fatal(err)
	}
	var ours kserveapi.InferenceService
	if err := json.Unmarshal(back, &ours); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&ours, in) {
		t.Errorf("through KServe's types:\n%s\nwas\n%s", back, b)
	}
	// What the deploy step reads, as KServe's own accessors see it.
	if got := theirs.Spec.Predictor.Model.GetStorageUri(); got == nil || *got != *in.Spec.Predictor.Model.StorageURI {
		t.Errorf("KServe's storage URI = %v", got)
	}
	if theirs.Status.Address.URL.String() != in.Status.Address.URL || theirs.Status.URL.String() != in.Status.URL {
		t.Errorf("KServe's addresses = %v, %v", theirs.Status.Address.URL, theirs.Status.URL)
	}
}

// The model spec marshals to KServe's bytes: the deploy step's serving digest, which predictor
// pods carry, does not change with the types that build it.
func TestModelSpecMarshalsAsKServes(t *testing.T) {
	m := full().Spec.Predictor.Model
	for _, name := range []string{"", kserveapi.ContainerName} {
		m.Name = name
		protocol := constants.InferenceServiceProtocol(*m.ProtocolVersion)
		theirs := &v1beta1.ModelSpec{
			ModelFormat: v1beta1.ModelFormat{Name: m.ModelFormat.Name},
			Runtime:     m.Runtime,
			PredictorExtensionSpec: v1beta1.PredictorExtensionSpec{
				StorageURI: m.StorageURI, ProtocolVersion: &protocol,
				Container: corev1.Container{Name: m.Name, Args: m.Args, Resources: m.Resources},
			},
		}
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(theirs)
		if string(a) != string(b) {
			t.Errorf("model spec\n%s\nKServe's\n%s", a, b)
		}
	}
}

// IsReady agrees with KServe's on the conditions KServe writes.
func TestIsReadyAsKServe(t *testing.T) {
	for name, conds := range map[string]duckv1.Conditions{
		"none":           nil,
		"ready":          {{Type: apis.ConditionReady, Status: corev1.ConditionTrue}, {Type: v1beta1.PredictorReady, Status: corev1.ConditionTrue}},
		"not ready":      {{Type: apis.ConditionReady, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}},
		"unknown":        {{Type: apis.ConditionReady, Status: corev1.ConditionUnknown}},
		"only predictor": {{Type: v1beta1.PredictorReady, Status: corev1.ConditionTrue}},
	} {
		theirs := v1beta1.InferenceServiceStatus{Status: duckv1.Status{Conditions: conds}}
		b, _ := json.Marshal(theirs)
		var ours kserveapi.InferenceServiceStatus
		if err := json.Unmarshal(b, &ours); err != nil {
			t.Fatal(err)
		}
		if ours.IsReady() != theirs.IsReady() {
			t.Errorf("%s: IsReady %v, KServe's %v", name, ours.IsReady(), theirs.IsReady())
		}
	}
}

// The names the deploy step relies on are KServe's.
func TestConstantsAreKServes(t *testing.T) {
	for _, c := range []struct{ ours, theirs string }{
		{kserveapi.SchemeGroupVersion.String(), v1beta1.SchemeGroupVersion.String()},
		{kserveapi.ContainerName, constants.InferenceServiceContainerName},
		{kserveapi.PodLabel, constants.InferenceServicePodLabelKey},
		{kserveapi.SourceURIAnnotation, constants.StorageInitializerSourceUriInternalAnnotationKey},
		{kserveapi.DeploymentModeAnnotation, constants.DeploymentMode},
		{string(kserveapi.InvalidSpec), string(v1beta1.InvalidSpec)},
		{string(kserveapi.BlockedByFailedLoad), string(v1beta1.BlockedByFailedLoad)},
		{kserveapi.ModelLoadFailed, string(v1beta1.ModelLoadFailed)},
		{kserveapi.NoSupportingRuntime, string(v1beta1.NoSupportingRuntime)},
	} {
		if c.ours != c.theirs {
			t.Errorf("%q, KServe's %q", c.ours, c.theirs)
		}
	}
	s := runtime.NewScheme()
	if err := kserveapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&kserveapi.InferenceService{}, &kserveapi.InferenceServiceList{}} {
		gvks, _, err := s.ObjectKinds(obj)
		want := "serving.kserve.io/v1beta1, Kind=" + reflect.TypeOf(obj).Elem().Name()
		if err != nil || len(gvks) != 1 || gvks[0].String() != want {
			t.Errorf("%T: kinds %v (%v), want %s", obj, gvks, err, want)
		}
	}
}

// scribble overwrites everything reachable from v: strings, numbers, map entries, pointees.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			v.SetMapIndex(k, reflect.Zero(v.Type().Elem()))
		}
	case reflect.String:
		v.SetString("scribbled")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(99)
	}
}

// A deep copy equals the service and shares no memory with it (informers hand out copies).
func TestDeepCopy(t *testing.T) {
	in := full()
	out := in.DeepCopyObject().(*kserveapi.InferenceService)
	if !equality.Semantic.DeepEqual(out, in) {
		t.Fatalf("copy %+v\nof %+v", out, in)
	}
	scribble(reflect.ValueOf(out))
	if !equality.Semantic.DeepEqual(in, full()) {
		t.Errorf("writing to the copy changed the original: %+v", in)
	}
	list := &kserveapi.InferenceServiceList{Items: []kserveapi.InferenceService{*full()}}
	lc := list.DeepCopyObject().(*kserveapi.InferenceServiceList)
	scribble(reflect.ValueOf(lc))
	if !equality.Semantic.DeepEqual(&list.Items[0], full()) {
		t.Errorf("writing to the list's copy changed the original")
	}
}
