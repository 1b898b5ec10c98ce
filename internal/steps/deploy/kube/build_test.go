package kube

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

func irisService() *deploy.Service {
	return &deploy.Service{
		Name: "iris", Namespace: "kubeflow-user", ModelURI: "pvc://gangboost-models/models/iris/v2",
		Claim: "gangboost-models", ModelPath: "models/iris/v2", MountPath: "/mnt/pvc",
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "500m", Memory: "1Gi",
		MinReplicas: 1, MaxReplicas: 3, Timeout: time.Minute, RunID: "0b7c3f8e",
		DeploymentMode: "RawDeployment", FSGroup: ptr(int64(65532)),
	}
}

func ptr[T any](v T) *T { return &v }

// asKServe is the InferenceService decoded strictly (a field the types do not know is an error)
// into kserveapi's types, which test/kservetypes holds to KServe's own (that module also decodes
// this step's InferenceService with KServe's types).
func asKServe(t *testing.T, v any) *kserveapi.InferenceService {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var theirs kserveapi.InferenceService
	if err := yaml.UnmarshalStrict(b, &theirs); err != nil {
		t.Fatalf("not a KServe InferenceService: %v\n%s", err, b)
	}
	return &theirs
}

// The InferenceService of the component's inputs, as KServe's typed API sees it.
func TestInferenceService(t *testing.T) {
	built, err := InferenceService(irisService())
	if err != nil {
		t.Fatal(err)
	}
	isvc := asKServe(t, built)
	m := isvc.Spec.Predictor.Model
	if m == nil || m.ModelFormat.Name != "xgboost" || *m.Runtime != "gangboost-xgboost" || string(*m.ProtocolVersion) != "v2" ||
		*m.StorageURI != "pvc://gangboost-models/models/iris/v2" {
		t.Fatalf("predictor.model = %+v", m)
	}
	// What KServe's controller reads: the model spec's runtime, protocol and storage URI.
	for _, rl := range []corev1.ResourceList{m.Resources.Requests, m.Resources.Limits} {
		if cpu := rl[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("0.5")) != 0 {
			t.Errorf("cpu = %s", cpu.String())
		}
		if mem := rl[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("1024Mi")) != 0 {
			t.Errorf("memory = %s", mem.String())
		}
	}
	ext := isvc.Spec.Predictor
	if ext.MinReplicas == nil || *ext.MinReplicas != 1 || ext.MaxReplicas != 3 {
		t.Errorf("replicas = %v-%d", ext.MinReplicas, ext.MaxReplicas)
	}
	if pa := isvc.Spec.Predictor.Annotations; pa[ModelURIAnnotation] != "pvc://gangboost-models/models/iris/v2" || pa[RunIDAnnotation] != "0b7c3f8e" ||
		isvc.Labels[ManagedByLabel] != ManagedBy {
		t.Errorf("metadata = %+v", isvc.ObjectMeta)
	}
	// The service says how KServe deploys it, whatever the cluster's default (Kubeflow's
	// KServe defaults to Serverless, where the gRPC port and port-forward do not work).
	if got := isvc.Annotations["serving.kserve.io/deploymentMode"]; got != "RawDeployment" {
		t.Errorf("deploymentMode annotation = %q, want RawDeployment", got)
	}
	if sc := isvc.Spec.Predictor.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != 65532 || sc.RunAsUser != nil || sc.RunAsGroup != nil {
		t.Errorf("predictor securityContext = %+v, want fsGroup 65532 only", sc)
	}
	if m.Args != nil {
		t.Errorf("predictor.model.args = %q without runtime args: want none (the ServingRuntime's alone)", m.Args)
	}
	s := irisService()
	s.RuntimeArgs = []string{"--enable_batching=true", "--max_batch_size=128"}
	built, _ = InferenceService(s)
	if got := asKServe(t, built).Spec.Predictor.Model.Args; !slices.Equal(got, s.RuntimeArgs) {
		t.Errorf("predictor.model.args = %q, want the runtime args %q (KServe appends them to the runtime's)", got, s.RuntimeArgs)
	}
	s = irisService()
	s.RunID, s.DeploymentMode, s.FSGroup, s.RunAsUser = "", "", nil, ptr(int64(1000))
	built, _ = InferenceService(s)
	if _, ok := built.Spec.Predictor.Annotations[RunIDAnnotation]; ok {
		t.Error("an empty run_id is recorded")
	}
	if _, ok := built.Annotations[DeploymentModeAnnotation]; ok {
		t.Error("an empty deployment_mode is recorded: want the cluster's default")
	}
	if sc := asKServe(t, built).Spec.Predictor.SecurityContext; sc == nil || sc.FSGroup != nil || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
		t.Errorf("predictor securityContext = %+v, want runAsUser 1000 only", sc)
	}
}

// The server-side apply request holds exactly the fields the component sets: no status, no
// empty container name, no creationTimestamp.
func TestApplyConfiguration(t *testing.T) {
	isvc, err := InferenceService(irisService())
	if err != nil {
		t.Fatal(err)
	}
	u, err := ApplyConfiguration(isvc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	const want = `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
  labels:
    app.kubernetes.io/managed-by: gangboost-deploy-inferenceservice
    app.kubernetes.io/part-of: gangboost
  name: iris
  namespace: kubeflow-user
spec:
  predictor:
    annotations:
      gangboost.dev/model-uri: pvc://gangboost-models/models/iris/v2
      gangboost.dev/run-id: 0b7c3f8e
      gangboost.dev/serving-spec: DIGEST
    maxReplicas: 3
    minReplicas: 1
    model:
      modelFormat:
        name: xgboost
      protocolVersion: v2
      resources:
        limits:
          cpu: 500m
          memory: 1Gi
        requests:
          cpu: 500m
          memory: 1Gi
      runtime: gangboost-xgboost
      storageUri: pvc://gangboost-models/models/iris/v2
    securityContext:
      fsGroup: 65532
`
	if want := strings.Replace(want, "DIGEST", isvc.Spec.Predictor.Annotations[ServingSpecAnnotation], 1); string(got) != want {
		t.Errorf("apply configuration:\n%s\nwant:\n%s", got, want)
	}
	// It is still an InferenceService to KServe's typed API (strictly: no unknown field).
	back := asKServe(t, u.Object)
	if *back.Spec.Predictor.Model.StorageURI != *isvc.Spec.Predictor.Model.StorageURI {
		t.Errorf("round trip: %+v", back.Spec.Predictor.Model)
	}
}

// The serving digest, which KServe copies into the pods, changes with what the pods serve and
// not with the number of replicas (scaling restarts nothing).
func TestServingSpecDigest(t *testing.T) {
	digest := func(change func(*deploy.Service)) string {
		s := irisService()
		change(s)
		isvc, err := InferenceService(s)
		if err != nil {
			t.Fatal(err)
		}
		return isvc.Spec.Predictor.Annotations[ServingSpecAnnotation]
	}
	base := digest(func(*deploy.Service) {})
	if len(base) != 16 || digest(func(*deploy.Service) {}) != base {
		t.Fatalf("digest %q is not 16 stable hex digits", base)
	}
	if d := digest(func(s *deploy.Service) { s.MinReplicas, s.MaxReplicas = 2, 5 }); d != base {
		t.Errorf("replicas change the digest")
	}
	if d := digest(func(s *deploy.Service) { s.CPU = "0.5" }); d != base {
		t.Errorf("an equal quantity written otherwise changes the digest")
	}
	for name, change := range map[string]func(*deploy.Service){
		"model_uri":    func(s *deploy.Service) { s.ModelURI = "pvc://gangboost-models/models/iris/v3" },
		"cpu":          func(s *deploy.Service) { s.CPU = "1" },
		"memory":       func(s *deploy.Service) { s.Memory = "2Gi" },
		"runtime":      func(s *deploy.Service) { s.Runtime = "gangboost-xgboost-grpc" },
		"protocol":     func(s *deploy.Service) { s.ProtocolVersion = "grpc-v2" },
		"run_id":       func(s *deploy.Service) { s.RunID = "another-run" },
		"model_sha256": func(s *deploy.Service) { s.ModelSHA256 = "3b1f0c" },
		"mode":         func(s *deploy.Service) { s.DeploymentMode = "Serverless" },
		"fs_group":     func(s *deploy.Service) { s.FSGroup = ptr(int64(1000)) },
		"runtime_args": func(s *deploy.Service) { s.RuntimeArgs = []string{"--enable_batching=false"} },
	} {
		if digest(change) == base {
			t.Errorf("%s does not change the digest", name)
		}
	}
	w := &watcher{applied: appliedVersion{servingSpec: base}}
	if !w.servesApplied(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ServingSpecAnnotation: base}}}) ||
		w.servesApplied(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ServingSpecAnnotation: "0123456789abcdef"}}}) {
		t.Error("servesApplied does not go by the digest")
	}
}

// KServe's lastFailureInfo carries the runtime's termination message; it is shown whole.
func TestModelStatusLine(t *testing.T) {
	// As KServe v0.20 writes it (its ModelStatus marshalled) and the backend reads it.
	b := []byte(`{"transitionStatus":"BlockedByFailedLoad","states":{"activeModelState":"","targetModelState":"FailedToLoad"},` +
		`"lastFailureInfo":{"reason":"ModelLoadFailed","message":"load model iris: no model file in /mnt/models\n","exitCode":1},` +
		`"copies":{"failedCopies":1}}`)
	var ms kserveapi.ModelStatus
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	got := modelStatus(&ms)
	for _, want := range []string{"transitionStatus BlockedByFailedLoad", "targetModelState FailedToLoad", "ModelLoadFailed (exit code 1): load model iris: no model file in /mnt/models"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestRelevantEvents(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1700000000+int64(s), 0)) }
	ev := func(kind, name, typ string, sec int, msg string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: typ, LastTimestamp: at(sec), Message: msg}
	}
	evs := []corev1.Event{
		ev("Pod", "iris-predictor-5d9c-abcde", corev1.EventTypeWarning, 4, "unhealthy"),
		ev("Pod", "iris-predictor-5d9c-abcde", corev1.EventTypeNormal, 3, "scheduled"),
		ev("InferenceService", "iris", corev1.EventTypeWarning, 1, "isvc"),
		ev("InferenceService", "iris", corev1.EventTypeWarning, 1, "Operation cannot be fulfilled: the object has been modified; please apply your changes"),
		ev("InferenceService", "iris", corev1.EventTypeNormal, 1, "normal isvc"),
		ev("Pod", "iris2-predictor-x", corev1.EventTypeWarning, 2, "other service"),
		ev("ReplicaSet", "iris-predictor-5d9c", corev1.EventTypeWarning, 2, "quota"),
		ev("Endpoints", "iris-predictor", corev1.EventTypeWarning, 2, "endpoints"),
		ev("HorizontalPodAutoscaler", "iris-predictor", corev1.EventTypeWarning, 2, "metrics"),
	}
	var got []string
	for _, ev := range relevantEvents(evs, "iris") {
		got = append(got, ev.Message)
	}
	if strings.Join(got, ",") != "isvc,quota,scheduled,unhealthy" {
		t.Errorf("relevant events = %v", got)
	}
}

func TestConditionLine(t *testing.T) {
	for _, tc := range []struct{ reason, message, want string }{
		{"", "", "Ready=False"},
		{"Predictor ingress not created", "", "Ready=False Predictor ingress not created"},
		{"MinimumReplicasUnavailable", "Deployment does not have minimum availability.", "Ready=False MinimumReplicasUnavailable: Deployment does not have minimum availability."},
	} {
		if got := conditionLine("Ready", "False", tc.reason, tc.message); got != tc.want {
			t.Errorf("conditionLine = %q, want %q", got, tc.want)
		}
	}
}

// A runtime that exits at start is reported with KServe's container name, restarts and its
// termination message; a container that is only not ready is not.
func TestCrashLooping(t *testing.T) {
	crashing := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerName, RestartCount: 3,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: "{\"msg\":\"serving\"}\ngangboost-runtime: listen on REST port 8080: address already in use\n"}},
	}}}}
	want := "container kserve-container restarting with back-off (CrashLoopBackOff, 3 restarts), last exit 1 (Error): gangboost-runtime: listen on REST port 8080: address already in use"
	if got := crashLooping(crashing); got != want {
		t.Errorf("crashLooping = %q\nwant %q", got, want)
	}
	notReady := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	if got := crashLooping(notReady); got != "" {
		t.Errorf("crashLooping of a running container = %q", got)
	}
}

// TestApplyChanged: an apply changed the service when it moved its spec, labels or
// annotations, or created it; a resourceVersion moved by KServe's status write between the
// read and the apply is no change.
func TestApplyChanged(t *testing.T) {
	before := &kserveapi.InferenceService{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "100", Generation: 3,
		Labels: map[string]string{"app": "iris"}, Annotations: map[string]string{RunIDAnnotation: "run-1"},
	}}
	after := func(edit func(m *metav1.ObjectMeta)) *metav1.ObjectMeta {
		m := before.ObjectMeta.DeepCopy()
		m.ResourceVersion = "107" // the status was written meanwhile
		edit(m)
		return m
	}
	for _, c := range []struct {
		name   string
		before *kserveapi.InferenceService
		after  *metav1.ObjectMeta
		want   bool
	}{
		{"status written meanwhile", before, after(func(*metav1.ObjectMeta) {}), false},
		{"spec", before, after(func(m *metav1.ObjectMeta) { m.Generation++ }), true},
		{"annotation", before, after(func(m *metav1.ObjectMeta) { m.Annotations[RunIDAnnotation] = "run-2" }), true},
		{"label added", before, after(func(m *metav1.ObjectMeta) { m.Labels["tier"] = "gold" }), true},
		{"created", &kserveapi.InferenceService{}, after(func(*metav1.ObjectMeta) {}), true},
	} {
		if got := applyChanged(c.before, c.after); got != c.want {
			t.Errorf("%s: applyChanged %v, want %v", c.name, got, c.want)
		}
	}
}

func TestServerlessRejection(t *testing.T) {
	isvc := &kserveapi.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "iris", UID: "uid-now"}}
	ev := func(kind, uid, reason string) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: "iris", UID: types.UID(uid)}, Type: corev1.EventTypeWarning,
			Reason: reason, Message: "It is not possible to use Knative deployment mode when Knative Services are not available"}
	}
	err := serverlessRejection(ev("InferenceService", "uid-now", "ServerlessModeRejected"), isvc)
	if err == nil {
		t.Fatal("no error for KServe's ServerlessModeRejected")
	}
	for _, want := range []string{"team-a/iris", "no Knative Serving", "set deployment_mode to RawDeployment", "Knative Services are not available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for name, other := range map[string]*corev1.Event{
		// A service of the same name deleted before this one was created.
		"earlier object": ev("InferenceService", "uid-before", "ServerlessModeRejected"),
		"other reason":   ev("InferenceService", "uid-now", "InternalError"),
		"other kind":     ev("InferenceGraph", "uid-now", "ServerlessModeRejected"),
	} {
		if err := serverlessRejection(other, isvc); err != nil {
			t.Errorf("%s: %v, want no error", name, err)
		}
	}
}
