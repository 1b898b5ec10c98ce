package kservetypes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gangboost/gangboost/manifests"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"github.com/kserve/kserve/pkg/constants"
	srwebhook "github.com/kserve/kserve/pkg/webhook/admission/servingruntime"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	knserving "knative.dev/serving/pkg/apis/serving"
	knv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// kserveDefaults holds the ClusterServingRuntimes a KServe v0.19.0 install creates.
const kserveDefaults = "../../manifests/testdata/kserve-v0.19.0-clusterservingruntimes.yaml"

const (
	image       = "ghcr.io/gangboost/gangboost-runtime:0.1.0"
	restRuntime = "gangboost-xgboost"
	grpcRuntime = "gangboost-xgboost-grpc"
)

// manifestSet is every object of the manifests, decoded into the typed API.
type manifestSet struct {
	namespaces []*corev1.Namespace
	pvcs       []*corev1.PersistentVolumeClaim
	runtimes   map[string]*v1alpha1.ClusterServingRuntime
	isvcs      map[string]*v1beta1.InferenceService
	// isvcFile names the file each InferenceService came from.
	isvcFile map[string]string
}

// decodeStrict decodes one YAML document into the typed object its apiVersion and kind name,
// refusing unknown and duplicate fields so a misspelt field fails here, not silently in a cluster.
func decodeStrict(doc []byte) (client.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj client.Object
	switch tm.GroupVersionKind() {
	case corev1.SchemeGroupVersion.WithKind("Namespace"):
		obj = &corev1.Namespace{}
	case corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"):
		obj = &corev1.PersistentVolumeClaim{}
	case v1alpha1.SchemeGroupVersion.WithKind("ClusterServingRuntime"):
		obj = &v1alpha1.ClusterServingRuntime{}
	case v1beta1.SchemeGroupVersion.WithKind("InferenceService"):
		obj = &v1beta1.InferenceService{}
	case v1alpha1.SchemeGroupVersion.WithKind("ClusterStorageContainer"):
		obj = &v1alpha1.ClusterStorageContainer{}
	case batchv1.SchemeGroupVersion.WithKind("Job"):
		obj = &batchv1.Job{}
	default:
		return nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use", tm.APIVersion, tm.Kind)
	}
	// The API server matches field names case-sensitively (sigs.k8s.io/json); encoding/json, and
	// so yaml.UnmarshalStrict, would take "autoselect" for "autoSelect" and hide the typo.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %w", tm.Kind, errors.Join(strict...))
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s: metadata.name is empty", tm.Kind)
	}
	return obj, nil
}

// loadManifests decodes every manifest the package embeds.
func loadManifests(t *testing.T) manifestSet {
	t.Helper()
	set := manifestSet{
		runtimes: map[string]*v1alpha1.ClusterServingRuntime{},
		isvcs:    map[string]*v1beta1.InferenceService{},
		isvcFile: map[string]string{},
	}
	files, err := fs.Glob(manifests.Files, "*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded manifests (err %v)", err)
	}
	for _, file := range files {
		if file == manifests.Kustomization {
			continue
		}
		data, err := manifests.Files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := manifests.YAMLDocs(data)
		if err != nil {
			t.Fatalf("%s: split YAML: %v", file, err)
		}
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", file)
		}
		for i, doc := range docs {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s document %d: %v", file, i+1, err)
				continue
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				set.namespaces = append(set.namespaces, o)
			case *corev1.PersistentVolumeClaim:
				set.pvcs = append(set.pvcs, o)
			case *v1alpha1.ClusterServingRuntime:
				if _, dup := set.runtimes[o.Name]; dup {
					t.Errorf("%s: ClusterServingRuntime %q defined twice", file, o.Name)
				}
				set.runtimes[o.Name] = o
			case *v1beta1.InferenceService:
				if _, dup := set.isvcs[o.Name]; dup {
					t.Errorf("%s: InferenceService %q defined twice", file, o.Name)
				}
				set.isvcs[o.Name] = o
				set.isvcFile[o.Name] = file
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return set
}

// loadKServeDefaults decodes the runtimes KServe v0.19.0 installs.
func loadKServeDefaults(t *testing.T) []*v1alpha1.ClusterServingRuntime {
	t.Helper()
	data, err := os.ReadFile(kserveDefaults)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.YAMLDocs(data)
	if err != nil {
		t.Fatalf("%s: %v", kserveDefaults, err)
	}
	var out []*v1alpha1.ClusterServingRuntime
	for i, doc := range docs {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%s document %d: %v", kserveDefaults, i+1, err)
		}
		out = append(out, obj.(*v1alpha1.ClusterServingRuntime))
	}
	return out
}

func TestDecodeStrictRejects(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{
			name: "misspelt field of ClusterServingRuntime",
			doc: `apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: x}
spec:
  supportedModelFormats: [{name: xgboost, autoselect: true}]
  containers: [{name: kserve-container, image: i}]`,
			want: `unknown field "spec.supportedModelFormats[0].autoselect"`,
		},
		{
			name: "storageUri under the wrong key",
			doc: `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: x}
spec: {predictor: {model: {modelFormat: {name: xgboost}, storageURI: "pvc://a/b"}}}`,
			want: `unknown field "spec.predictor.model.storageURI"`,
		},
		{
			name: "duplicate field",
			doc:  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  name: b\n",
			want: `key "name" already set`,
		},
		{
			name: "kind not used here",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			want: `kind "ConfigMap": not a kind these manifests use`,
		},
		{
			name: "no name",
			doc:  "apiVersion: v1\nkind: Namespace\nmetadata: {}\n",
			want: "metadata.name is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeStrict([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeStrict error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The claim goes into the namespace the steps run in (a Kubeflow profile's, or kubeflow), which
// the user gives when applying: no Namespace object, no namespace written.
func TestPVC(t *testing.T) {
	set := loadManifests(t)
	if len(set.namespaces) != 0 {
		t.Errorf("the manifests create Namespace %q: they must go into the user's namespace (kubectl apply -n)", set.namespaces[0].Name)
	}
	if len(set.pvcs) != 1 {
		t.Fatalf("pvc.yaml: want one PersistentVolumeClaim, got %d", len(set.pvcs))
	}
	pvc := set.pvcs[0]
	if pvc.Name != "gangboost-models" || pvc.Namespace != "" {
		t.Errorf("PVC is %s/%s, want gangboost-models in no namespace (the one it is applied to)", pvc.Namespace, pvc.Name)
	}
	// Every trainer pod of a gang mounts the claim at once, on different nodes.
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("PVC accessModes = %v, want [ReadWriteMany]", pvc.Spec.AccessModes)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("5Gi")) != 0 {
		t.Errorf("PVC storage request = %s, want 5Gi", got.String())
	}
}

// servedVersions are the XGBoost major versions the runtimes declare: those whose model files the
// evaluator (runtime/forest) is verified to serve (see the comment in clusterservingruntime.yaml).
var servedVersions = []string{"1", "2", "3"}

// gangboostRuntimes names the runtimes of clusterservingruntime.yaml.
var gangboostRuntimes = []string{restRuntime, grpcRuntime}

func TestClusterServingRuntimes(t *testing.T) {
	set := loadManifests(t)
	tests := []struct {
		name      string
		protocols []constants.InferenceServiceProtocol
		port      corev1.ContainerPort
	}{
		{restRuntime, []constants.InferenceServiceProtocol{constants.ProtocolV1, constants.ProtocolV2},
			corev1.ContainerPort{Name: "http1", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		{grpcRuntime, []constants.InferenceServiceProtocol{constants.ProtocolGRPCV2},
			corev1.ContainerPort{Name: "h2c", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}},
	}
	if len(set.runtimes) != len(tests) {
		t.Errorf("manifests hold %d ClusterServingRuntimes, the test checks %d", len(set.runtimes), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, ok := set.runtimes[tt.name]
			if !ok {
				t.Fatalf("no ClusterServingRuntime %q", tt.name)
			}
			spec := rt.Spec
			var versions []string
			for _, f := range spec.SupportedModelFormats {
				if f.Name != "xgboost" || f.Version == nil {
					t.Errorf("supportedModelFormats: %q version %v, want xgboost with a version", f.Name, f.Version)
					continue
				}
				versions = append(versions, *f.Version)
				// Opt-in: KServe must never pick gangboost for an InferenceService that does not
				// name it, so other teams' xgboost services stay on their runtimes.
				if f.AutoSelect == nil || *f.AutoSelect || f.IsAutoSelectEnabled() {
					t.Errorf("xgboost %s: autoSelect %v, want false (an InferenceService opts in by naming the runtime)", *f.Version, ptrString(f.AutoSelect))
				}
				if f.Priority != nil {
					t.Errorf("xgboost %s: priority %d, want none (priority only ranks auto-selected runtimes)", *f.Version, *f.Priority)
				}
			}
			if !slices.Equal(versions, servedVersions) {
				t.Errorf("xgboost versions = %v, want %v (the versions the evaluator is verified to serve)", versions, servedVersions)
			}
			if !slices.Equal(spec.ProtocolVersions, tt.protocols) {
				t.Errorf("protocolVersions = %v, want %v", spec.ProtocolVersions, tt.protocols)
			}
			if spec.IsMultiModelRuntime() || spec.IsDisabled() {
				t.Errorf("multiModel %v disabled %v, want a single-model runtime that is enabled", spec.IsMultiModelRuntime(), spec.IsDisabled())
			}
			if len(spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(spec.Containers))
			}
			c := spec.Containers[0]
			if c.Name != constants.InferenceServiceContainerName {
				t.Errorf("container name %q, want %q (KServe merges the predictor into it by name)", c.Name, constants.InferenceServiceContainerName)
			}
			if c.Image != image {
				t.Errorf("image %q, want %q", c.Image, image)
			}
			wantArgs := []string{"--model_name={{.Name}}", "--model_dir=/mnt/models", "--http_port=8080", "--grpc_port=8081", "--exit_on_load_failure", "--enable_batching=auto"}
			if !slices.Equal(c.Args, wantArgs) {
				t.Errorf("args = %q, want %q", c.Args, wantArgs)
			}
			// A failed load's last log line is how KServe learns why (lastFailureInfo).
			if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("terminationMessagePolicy %q, want FallbackToLogsOnError", c.TerminationMessagePolicy)
			}
			// One port: Knative accepts exactly one, and KServe's Service sends port 80 to the first.
			if len(c.Ports) != 1 || c.Ports[0] != tt.port {
				t.Errorf("ports = %+v, want exactly %+v", c.Ports, tt.port)
			}
			for _, p := range []struct {
				kind  string
				probe *corev1.Probe
				path  string
			}{{"readinessProbe", c.ReadinessProbe, "/v2/health/ready"}, {"livenessProbe", c.LivenessProbe, "/v2/health/live"}} {
				switch {
				case p.probe == nil || p.probe.HTTPGet == nil:
					t.Errorf("%s: want httpGet %s", p.kind, p.path)
				case p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.IntValue() != 8080:
					t.Errorf("%s: httpGet %s port %s, want %s port 8080 (--http_port)", p.kind, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
				}
			}
			// The readiness period is how long a loaded replica waits for traffic; the failures
			// that take it out of the endpoints span 15 s, so one slow probe under load does not.
			if r := c.ReadinessProbe; r != nil && (r.PeriodSeconds != 1 || r.PeriodSeconds*r.FailureThreshold < 15) {
				t.Errorf("readinessProbe: period %d s, failureThreshold %d; want a 1 s period and at least 15 s of failures", r.PeriodSeconds, r.FailureThreshold)
			}
			sc := c.SecurityContext
			if sc == nil {
				t.Fatal("no securityContext")
			}
			switch {
			case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
				t.Error("securityContext.runAsNonRoot is not true")
			case sc.RunAsUser == nil || *sc.RunAsUser != 65532:
				t.Errorf("securityContext.runAsUser = %v, want 65532 (distroless nonroot)", sc.RunAsUser)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Error("securityContext.readOnlyRootFilesystem is not true")
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Error("securityContext.allowPrivilegeEscalation is not false")
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
				t.Errorf("securityContext.capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
			case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
				// Required by the "restricted" Pod Security Standard.
				t.Errorf("securityContext.seccompProfile = %+v, want type RuntimeDefault", sc.SeccompProfile)
			}
			for name, want := range map[string]struct {
				got  resource.Quantity
				want string
			}{
				"requests.cpu":    {c.Resources.Requests[corev1.ResourceCPU], "100m"},
				"requests.memory": {c.Resources.Requests[corev1.ResourceMemory], "64Mi"},
				"limits.cpu":      {c.Resources.Limits[corev1.ResourceCPU], "1"},
				"limits.memory":   {c.Resources.Limits[corev1.ResourceMemory], "256Mi"},
			} {
				if want.got.Cmp(resource.MustParse(want.want)) != 0 {
					t.Errorf("resources.%s = %s, want %s", name, want.got.String(), want.want)
				}
			}
		})
	}
}

// newScheme registers the kinds the KServe webhook and client touch.
func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// admit runs KServe's own ClusterServingRuntime admission webhook on rt, with existing in the cluster.
func admit(t *testing.T, s *runtime.Scheme, rt *v1alpha1.ClusterServingRuntime, existing []*v1alpha1.ClusterServingRuntime) admission.Response {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(s)
	for _, e := range existing {
		b = b.WithObjects(e.DeepCopy())
	}
	raw, err := json.Marshal(rt)
	if err != nil {
		t.Fatal(err)
	}
	v := &srwebhook.ClusterServingRuntimeValidator{Client: b.Build(), Decoder: admission.NewDecoder(s)}
	return v.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create,
		Name:      rt.Name,
		Object:    runtime.RawExtension{Raw: raw},
	}})
}

// TestRuntimesAdmittedBesideKServeDefaults applies the runtimes, in file order, to a cluster that
// holds KServe's default runtimes, through KServe's own admission webhook.
func TestRuntimesAdmittedBesideKServeDefaults(t *testing.T) {
	set := loadManifests(t)
	s := newScheme(t)
	existing := loadKServeDefaults(t)
	for _, name := range []string{restRuntime, grpcRuntime} {
		rt := set.runtimes[name]
		if resp := admit(t, s, rt, existing); !resp.Allowed {
			t.Errorf("KServe's webhook denies ClusterServingRuntime %s: %s", name, resp.Result.Message)
		}
		existing = append(existing, rt)
	}

	// The check can fail: auto-selected at priority 2, the runtime would clash with
	// kserve-mlserver (xgboost 1 and 2, v2, priority 2).
	clash := set.runtimes[restRuntime].DeepCopy()
	for i := range clash.Spec.SupportedModelFormats {
		clash.Spec.SupportedModelFormats[i].AutoSelect = ptr(true)
		clash.Spec.SupportedModelFormats[i].Priority = ptr(int32(2))
	}
	resp := admit(t, s, clash, loadKServeDefaults(t))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "kserve-mlserver") {
		t.Errorf("autoSelect at priority 2 beside kserve-mlserver: allowed %v (%s), want denied naming kserve-mlserver", resp.Allowed, resp.Result.Message)
	}
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// supporting asks KServe's runtime selection (what its predictor reconciler calls for an
// InferenceService without spec.predictor.model.runtime) which runtimes it would pick from, in
// order, in a cluster holding runtimes.
func supporting(t *testing.T, runtimes []*v1alpha1.ClusterServingRuntime, version *string, protocol constants.InferenceServiceProtocol) []string {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(newScheme(t))
	for _, rt := range runtimes {
		b = b.WithObjects(rt.DeepCopy())
	}
	m := v1beta1.ModelSpec{
		ModelFormat:            v1beta1.ModelFormat{Name: "xgboost", Version: version},
		PredictorExtensionSpec: v1beta1.PredictorExtensionSpec{ProtocolVersion: ptr(protocol)},
	}
	got, err := m.GetSupportingRuntimes(context.Background(), b.Build(), "team-a", false, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	return names
}

// TestRuntimeSelectionOptIn checks that KServe's runtime selection leaves gangboost out for an
// xgboost InferenceService that names no runtime: with KServe's own runtimes installed it gets
// one of them, with only gangboost's installed it gets none (KServe reports NoSupportingRuntime).
func TestRuntimeSelectionOptIn(t *testing.T) {
	set := loadManifests(t)
	var ours []*v1alpha1.ClusterServingRuntime
	for _, name := range gangboostRuntimes {
		ours = append(ours, set.runtimes[name])
	}
	withDefaults := append(loadKServeDefaults(t), ours...)
	for _, version := range []*string{nil, ptr("1"), ptr("2"), ptr("3")} {
		for _, protocol := range []constants.InferenceServiceProtocol{constants.ProtocolV1, constants.ProtocolV2, constants.ProtocolGRPCV2} {
			t.Run(fmt.Sprintf("xgboost-%s-%s", ptrString(version), protocol), func(t *testing.T) {
				got := supporting(t, withDefaults, version, protocol)
				for _, name := range got {
					if slices.Contains(gangboostRuntimes, name) {
						t.Errorf("beside KServe's runtimes, KServe picks from %v: %s takes an InferenceService that does not name it", got, name)
					}
				}
				if got := supporting(t, ours, version, protocol); len(got) != 0 {
					t.Errorf("with only gangboost's runtimes, KServe picks from %v, want none", got)
				}
			})
		}
	}
	// KServe's own runtimes still take xgboost 1 over V2 (kserve-mlserver) and V1
	// (kserve-xgbserver), so the check above does not pass for want of any runtime.
	if got := supporting(t, withDefaults, ptr("1"), constants.ProtocolV2); len(got) == 0 {
		t.Errorf("xgboost 1 over v2: no KServe runtime picked; the fixture %s is wrong", kserveDefaults)
	}

	// The check can fail: the same runtime with autoSelect on is picked.
	auto := set.runtimes[restRuntime].DeepCopy()
	for i := range auto.Spec.SupportedModelFormats {
		auto.Spec.SupportedModelFormats[i].AutoSelect = ptr(true)
	}
	if got := supporting(t, []*v1alpha1.ClusterServingRuntime{auto}, nil, constants.ProtocolV2); !slices.Equal(got, []string{restRuntime}) {
		t.Errorf("%s with autoSelect true: KServe picks from %v, want [%s]", restRuntime, got, restRuntime)
	}
}

// TestNamedRuntimeVersions checks what KServe's predictor reconciler accepts for an InferenceService
// that names a gangboost runtime: modelFormat xgboost with no version or a declared one; another
// version is refused (NoSupportingRuntime, "Specified runtime does not support specified
// framework/version") rather than served on a guess.
func TestNamedRuntimeVersions(t *testing.T) {
	set := loadManifests(t)
	for _, name := range gangboostRuntimes {
		rt := set.runtimes[name]
		for _, version := range append([]*string{nil, ptr("0"), ptr("9")}, ptrs(servedVersions)...) {
			m := v1beta1.ModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "xgboost", Version: version}, Runtime: ptr(name)}
			want := version == nil || slices.Contains(servedVersions, *version)
			if got := m.RuntimeSupportsModel(&rt.Spec); got != want {
				t.Errorf("%s, modelFormat xgboost version %s: KServe accepts %v, want %v", name, ptrString(version), got, want)
			}
		}
	}
}

func ptrs[T any](vs []T) []*T {
	out := make([]*T, len(vs))
	for i := range vs {
		out[i] = &vs[i]
	}
	return out
}

func TestInferenceServices(t *testing.T) {
	set := loadManifests(t)
	pvc := set.pvcs[0]
	tests := []struct {
		name     string
		runtime  string
		protocol constants.InferenceServiceProtocol
	}{
		{"iris", restRuntime, constants.ProtocolV2},
		{"iris-grpc", grpcRuntime, constants.ProtocolGRPCV2},
	}
	if len(set.isvcs) != len(tests) {
		t.Errorf("manifests hold %d InferenceServices, the test checks %d", len(set.isvcs), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isvc, ok := set.isvcs[tt.name]
			if !ok {
				t.Fatalf("no InferenceService %q", tt.name)
			}
			file := set.isvcFile[tt.name]
			if isvc.Namespace != "" {
				t.Errorf("%s: namespace %q, want none (the claim's, where it is applied)", file, isvc.Namespace)
			}
			if _, err := (&v1beta1.InferenceServiceValidator{}).ValidateCreate(context.Background(), isvc); err != nil {
				t.Errorf("%s: KServe's InferenceService webhook denies it: %v", file, err)
			}
			m := isvc.Spec.Predictor.Model
			if m == nil {
				t.Fatalf("%s: spec.predictor.model is not set", file)
			}
			if m.ModelFormat.Name != "xgboost" {
				t.Errorf("%s: modelFormat.name %q, want xgboost", file, m.ModelFormat.Name)
			}
			if m.Runtime == nil || *m.Runtime != tt.runtime {
				t.Errorf("%s: runtime %v, want %s", file, m.Runtime, tt.runtime)
			}
			if m.ProtocolVersion == nil || *m.ProtocolVersion != tt.protocol {
				t.Errorf("%s: protocolVersion %v, want %s", file, m.ProtocolVersion, tt.protocol)
			}
			// What KServe's predictor reconciler checks for an explicitly named runtime.
			if rt, ok := set.runtimes[tt.runtime]; !ok {
				t.Errorf("%s: runtime %s is not in the manifests", file, tt.runtime)
			} else if !rt.Spec.IsProtocolVersionSupported(m.GetProtocol()) || !m.RuntimeSupportsModel(&rt.Spec) {
				t.Errorf("%s: runtime %s does not support protocol %s for modelFormat %s", file, tt.runtime, m.GetProtocol(), m.ModelFormat.Name)
			}

			// storageUri must name the PVC of pvc.yaml and the models/<model>/<version> layout.
			uri := ""
			if m.StorageURI != nil {
				uri = *m.StorageURI
			}
			rest, ok := strings.CutPrefix(uri, "pvc://")
			if !ok {
				t.Fatalf("%s: storageUri %q, want pvc://%s/models/<model>/<version>", file, uri, pvc.Name)
			}
			claim, modelPath, _ := strings.Cut(rest, "/")
			if claim != pvc.Name || isvc.Namespace != pvc.Namespace {
				t.Errorf("%s: storageUri claim %s in namespace %s, want %s in %s (pvc.yaml)", file, claim, isvc.Namespace, pvc.Name, pvc.Namespace)
			}
			if dir, version := path.Split(modelPath); path.Clean(dir) != "models/iris" || version == "" {
				t.Errorf("%s: storageUri path %q, want models/iris/<version>", file, modelPath)
			}
		})
	}
}

// TestKnativeAcceptsRuntimes runs Knative Serving's revision defaulting and validation on the
// runtime containers, as its webhooks do when KServe's default install mode (Serverless) turns an
// InferenceService into a Knative Service; Knative allows one container port only.
func TestKnativeAcceptsRuntimes(t *testing.T) {
	set := loadManifests(t)
	validate := func(c corev1.Container) error {
		ctx := apis.WithinCreate(context.Background())
		rs := knv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{*c.DeepCopy()}}}
		rs.SetDefaults(ctx)
		if err := knserving.ValidatePodSpec(ctx, rs.PodSpec); err != nil {
			if e := err.Filter(apis.ErrorLevel); e != nil {
				return e
			}
			t.Logf("Knative warnings: %v", err)
		}
		return nil
	}
	for _, name := range []string{restRuntime, grpcRuntime} {
		if err := validate(set.runtimes[name].Spec.Containers[0]); err != nil {
			t.Errorf("%s: Knative rejects the container: %v", name, err)
		}
	}
	// The check can fail: both ports in one container is what Knative refuses.
	both := set.runtimes[restRuntime].Spec.Containers[0]
	both.Ports = append(slices.Clone(both.Ports), set.runtimes[grpcRuntime].Spec.Containers[0].Ports...)
	if err := validate(both); err == nil || !strings.Contains(err.Error(), "port") {
		t.Errorf("container with ports 8080 and 8081: Knative error %v, want one about ports", err)
	}
}

// storageContainer decodes a ClusterStorageContainer of manifests/kserve, strictly.
func storageContainer(t *testing.T, file string) *v1alpha1.ClusterStorageContainer {
	t.Helper()
	b, err := os.ReadFile("../../manifests/kserve/" + file)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decodeStrict(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	csc, ok := obj.(*v1alpha1.ClusterStorageContainer)
	if !ok {
		t.Fatalf("%s holds a %T, not a ClusterStorageContainer", file, obj)
	}
	return csc
}

// The storage initializer's ClusterStorageContainer is one KServe's own types take strictly, and
// KServe's own matching picks it for gangboost's s3:// model URIs and nothing else.
func TestClusterStorageContainerClaimsS3(t *testing.T) {
	csc := storageContainer(t, "clusterstoragecontainer.yaml")
	c := csc.Spec.Container
	if c.Name != "storage-initializer" || c.Image != "ghcr.io/gangboost/gangboost-storage-initializer:0.1.0" {
		t.Errorf("container %s image %s: KServe recognises only the name storage-initializer; want gangboost's image", c.Name, c.Image)
	}
	for uri, want := range map[string]bool{
		"s3://models/team-a/gangboost/iris/run-1a2b3c4d/": true,
		"s3://bucket/model.bst":                           true,
		"gs://models/iris/v1":                             false,
		"pvc://gangboost-models/models/iris/v1":           false,
		"model-registry://iris/v1":                        false,
	} {
		if got, err := csc.Spec.IsStorageUriSupported(uri); err != nil || got != want {
			t.Errorf("IsStorageUriSupported(%s) = %v, %v; want %v", uri, got, err, want)
		}
	}
}

// The registry's storage initializer claims model-registry:// and nothing else, and sets the
// variables its v0.3.0 main reads.
func TestModelRegistryStorageContainer(t *testing.T) {
	csc := storageContainer(t, "model-registry-storage-container.yaml")
	env := map[string]string{}
	for _, e := range csc.Spec.Container.Env {
		env[e.Name] = e.Value
	}
	if csc.Spec.Container.Name != "storage-initializer" || env["MODEL_REGISTRY_BASE_URL"] == "" || env["MODEL_REGISTRY_SCHEME"] == "" {
		t.Errorf("container %s env %v: want storage-initializer with MODEL_REGISTRY_BASE_URL and MODEL_REGISTRY_SCHEME", csc.Spec.Container.Name, env)
	}
	for uri, want := range map[string]bool{"model-registry://iris/v1": true, "s3://models/iris/v1/": false, "pvc://c/models/iris/v1": false} {
		if got, err := csc.Spec.IsStorageUriSupported(uri); err != nil || got != want {
			t.Errorf("IsStorageUriSupported(%s) = %v, %v; want %v", uri, got, err, want)
		}
	}
}
