package serving

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/grpc/inference"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
	"github.com/gangboost/gangboost/test/testbin"
)

const (
	// namespace is where the tests apply manifests/pvc.yaml's claim, which
	// the InferenceServices' storageUri name.
	namespace = "gangboost"
	claim     = "gangboost-models"
	isvcLabel = "serving.kserve.io/inferenceservice"
	// modelMount is where KServe's pod mutator mounts a pvc:// model.
	modelMount = "/mnt/models"
)

// Iris rows, one of each species.
var irisRows = []float32{
	5.1, 3.5, 1.4, 0.2,
	5.9, 3.0, 4.2, 1.5,
	6.7, 3.0, 5.2, 2.3,
}

func manifestsDir(t testing.TB) string {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "manifests")
}

// runtimeImage is the image of the gangboost ClusterServingRuntimes.
func runtimeImage() (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "manifests", "clusterservingruntime.yaml")
	objs, err := cluster.DecodeFiles(path)
	if err != nil {
		return "", err
	}
	image := ""
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
		for _, c := range containers {
			img, _ := c.(map[string]any)["image"].(string)
			if image != "" && img != image {
				return "", fmt.Errorf("%s: runtimes use two images, %s and %s", path, image, img)
			}
			image = img
		}
	}
	if image == "" {
		return "", fmt.Errorf("%s: no container image", path)
	}
	return image, nil
}

// The manifests name no namespace; the namespaced ones go into namespace, as
// `kubectl apply -n gangboost -f` puts them.
func decodeManifest(t testing.TB, name string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := cluster.DecodeFiles(filepath.Join(manifestsDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if k := o.GetKind(); k == "PersistentVolumeClaim" || k == "InferenceService" {
			o.SetNamespace(namespace)
		}
	}
	return objs
}

// servingEnv is the manifests' namespace, claim and runtimes on the control
// plane, with an Iris model trained onto the claim.
type servingEnv struct {
	t *testing.T
	c *cluster.Cluster
	// pvcDir is the local folder behind the claim.
	pvcDir string
	// irisDir holds the trained model: models/iris/v1 on the claim.
	irisDir string
}

func newServingEnv(t *testing.T) *servingEnv {
	t.Helper()
	c := cluster.Require(t)
	for _, port := range []int{8080, 8081} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d on 127.0.0.1: %v; the runtime's pods listen there (--http_port/--grpc_port of manifests/clusterservingruntime.yaml) on the shared host network", port, err)
		}
		l.Close()
	}
	e := &servingEnv{t: t, c: c, pvcDir: t.TempDir()}
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	objs = append(objs, ns)
	objs = append(objs, decodeManifest(t, "clusterservingruntime.yaml")...)
	if err := cluster.Apply(ctx, c.Client, objs...); err != nil {
		t.Fatal(err)
	}
	// The claim of manifests/pvc.yaml names no StorageClass; a hostPath
	// volume reserved for it stands in for the cluster's RWX storage.
	hostPathType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "gangboost-models-" + filepath.Base(e.pvcDir)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: e.pvcDir, Type: &hostPathType}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
		},
	}
	if err := c.Client.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Apply(ctx, c.Client, decodeManifest(t, "pvc.yaml")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.Delete(context.Background(), pv)
	})
	cluster.WaitFor(e.t, 60*time.Second, "claim "+claim+" Bound", func(ctx context.Context) (bool, error) {
		var pvc corev1.PersistentVolumeClaim
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, &pvc)
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	e.irisDir = filepath.Join(e.pvcDir, "models", "iris", "v1")
	e.train(e.irisDir)
	return e
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// train runs the trainer as the pipeline's XGBoostJob would, into dir.
func (e *servingEnv) train(dir string) {
	e.t.Helper()
	e.trainRounds(dir, 20)
}

func (e *servingEnv) trainRounds(dir string, rounds int) {
	e.t.Helper()
	trainer := filepath.Join(testbin.Dir(e.t), "gangboost-train")
	if _, err := os.Stat(trainer); err != nil {
		e.t.Fatalf("trainer %s not found (run `make build`, or set GANGBOOST_BIN_DIR): %v", trainer, err)
	}
	start := time.Now()
	out, err := exec.Command(trainer, "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", fmt.Sprint(rounds), "--max-depth", "3", "--nthread", "1", "--model-dir", dir).CombinedOutput()
	if err != nil {
		e.t.Fatalf("train: %v\n%s", err, out)
	}
	e.t.Logf("trained %s in %s", dir, time.Since(start).Round(time.Millisecond))
}

// inferenceService reads an InferenceService of manifests/.
func (e *servingEnv) inferenceService(file string) *kserveapi.InferenceService {
	e.t.Helper()
	objs := decodeManifest(e.t, file)
	if len(objs) != 1 || objs[0].GetKind() != "InferenceService" {
		e.t.Fatalf("%s: want one InferenceService", file)
	}
	var isvc kserveapi.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &isvc); err != nil {
		e.t.Fatal(err)
	}
	return &isvc
}

// create creates an InferenceService and removes it at the end of the
// test, waiting for its pods to be gone: the runtime's ports are then free
// for the next one.
func (e *servingEnv) create(isvc *kserveapi.InferenceService) time.Time {
	e.t.Helper()
	start := time.Now()
	if err := e.c.Client.Create(context.Background(), isvc); err != nil {
		e.t.Fatalf("create InferenceService %s: %v", isvc.Name, err)
	}
	e.t.Cleanup(func() { e.remove(isvc) })
	return start
}

func (e *servingEnv) remove(isvc *kserveapi.InferenceService) {
	ctx := context.Background()
	if e.t.Failed() {
		e.t.Logf("InferenceService %s:\n%s", isvc.Name, e.describe(ctx, isvc.Name))
	}
	if err := e.c.Client.Delete(ctx, isvc, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
		e.t.Errorf("delete InferenceService %s: %v", isvc.Name, err)
	}
	// Foreground deletion: the InferenceService goes once its Deployment
	// and pods have (its last update passes KServe's webhook, so it must
	// be gone while the manager runs).
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.pods(ctx, isvc.Name)
		if err != nil || len(pods) > 0 {
			return false, nil
		}
		err = e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &kserveapi.InferenceService{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		e.t.Errorf("InferenceService %s or its pods still there 60s after its deletion", isvc.Name)
	}
}

func (e *servingEnv) pods(ctx context.Context, isvc string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := e.c.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{isvcLabel: isvc})
	return pods.Items, err
}

// describe shows an InferenceService's conditions and its pods' state, for
// failure output.
func (e *servingEnv) describe(ctx context.Context, name string) string {
	var b strings.Builder
	var isvc kserveapi.InferenceService
	if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &isvc); err == nil {
		for _, c := range isvc.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	pods, _ := e.pods(ctx, name)
	for _, p := range pods {
		fmt.Fprintf(&b, "  pod %s phase %s node %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return b.String()
}

// waitReady waits for the InferenceService's Ready condition and returns
// it.
func (e *servingEnv) waitReady(name string, start time.Time) *kserveapi.InferenceService {
	e.t.Helper()
	var isvc kserveapi.InferenceService
	cluster.WaitFor(e.t, 90*time.Second, "InferenceService "+name+" Ready", func(ctx context.Context) (bool, error) {
		if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &isvc); err != nil {
			return false, nil
		}
		return isvc.Status.IsReady(), nil
	})
	e.t.Logf("InferenceService %s Ready %s after create", name, time.Since(start).Round(time.Millisecond))
	return &isvc
}

// checkPredictorPod checks what KServe made of the runtime for the model:
// a pod placed by kube-scheduler, the claim mounted at /mnt/models with the
// storageUri's path as subPath (KServe's pod mutator), and the runtime's
// arguments with the model's name.
func (e *servingEnv) checkPredictorPod(name, subPath string) corev1.Pod {
	e.t.Helper()
	pods, err := e.pods(context.Background(), name)
	if err != nil || len(pods) != 1 {
		e.t.Fatalf("pods of InferenceService %s: %d, %v; want 1", name, len(pods), err)
	}
	p := pods[0]
	if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Spec.NodeName == "" {
		e.t.Errorf("pod %s: schedulerName %q node %q, want placed by %s", p.Name, p.Spec.SchedulerName, p.Spec.NodeName, corev1.DefaultSchedulerName)
	}
	var kc *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "kserve-container" {
			kc = &p.Spec.Containers[i]
		}
	}
	if kc == nil {
		e.t.Fatalf("pod %s has no kserve-container", p.Name)
	}
	args := strings.Join(kc.Args, " ")
	for _, want := range []string{"--model_name=" + name, "--model_dir=" + modelMount} {
		if !strings.Contains(args, want) {
			e.t.Errorf("kserve-container args %q lack %q", args, want)
		}
	}
	mounted := false
	for _, vm := range kc.VolumeMounts {
		if vm.MountPath != modelMount {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == vm.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim && vm.SubPath == subPath {
				mounted = true
			}
		}
	}
	if !mounted {
		e.t.Errorf("kserve-container does not mount claim %s at %s with subPath %s: mounts %+v, volumes %+v", claim, modelMount, subPath, kc.VolumeMounts, p.Spec.Volumes)
	}
	return p
}

// libxgboostPredict is libxgboost's own prediction (what Booster.predict
// returns) from the model file the trainer wrote.
func libxgboostPredict(t *testing.T, dir string, rows []float32, ncol int) []float32 {
	t.Helper()
	b, err := xgb.LoadBooster(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	out, _, err := b.PredictDense(rows, len(rows)/ncol, ncol, float32(math.NaN()), xgb.PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values %v, libxgboost gives %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s: %v, libxgboost gives %v", what, got, want)
		}
	}
}

// TestInferenceServices runs the InferenceServices of manifests/ through
// KServe's controller over a model the trainer wrote to the claim, one
// after the other (their pods share the host's ports 8080 and 8081).
func TestInferenceServices(t *testing.T) {
	e := newServingEnv(t)
	want := libxgboostPredict(t, e.irisDir, irisRows, 4)

	t.Run("REST", func(t *testing.T) {
		e := *e
		e.t = t
		isvc := e.inferenceService("inferenceservice.yaml")
		start := e.create(isvc)
		e.waitReady(isvc.Name, start)
		e.checkPredictorPod(isvc.Name, "models/iris/v1")
		// What RawDeployment makes of an InferenceService.
		ctx := context.Background()
		name := isvc.Name + "-predictor"
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &autoscalingv2.HorizontalPodAutoscaler{}} {
			if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
				t.Errorf("%T %s: %v", obj, name, err)
			}
		}
		addr, err := podrunner.ServiceAddr(ctx, e.c.Kube, namespace, name, 80)
		if err != nil {
			t.Fatal(err)
		}
		got := restInfer(t, addr, isvc.Name, irisRows, 4)
		checkSame(t, "V2 REST output-0", got, want)
	})

	t.Run("gRPC", func(t *testing.T) {
		e := *e
		e.t = t
		isvc := e.inferenceService("inferenceservice-grpc.yaml")
		// An InferenceService turns the runtime's batching on with an argument of its own:
		// KServe appends the predictor's args to the runtime's (runtime/README.md, batching).
		isvc.Spec.Predictor.Model.Args = []string{"--enable_batching"}
		start := e.create(isvc)
		e.waitReady(isvc.Name, start)
		pod := e.checkPredictorPod(isvc.Name, "models/iris/v1")
		for _, c := range pod.Spec.Containers {
			if c.Name == "kserve-container" && (len(c.Args) < 2 || c.Args[0] != "--model_name="+isvc.Name || c.Args[len(c.Args)-1] != "--enable_batching") {
				t.Errorf("kserve-container args %q: want the runtime's, then the InferenceService's --enable_batching", c.Args)
			}
		}
		svc, err := e.c.Kube.CoreV1().Services(namespace).Get(context.Background(), isvc.Name+"-predictor", metav1.GetOptions{})
		if err != nil || len(svc.Spec.Ports) == 0 {
			t.Fatalf("Service %s-predictor: %v %+v", isvc.Name, err, svc)
		}
		addr, err := podrunner.ServiceAddr(context.Background(), e.c.Kube, namespace, svc.Name, svc.Spec.Ports[0].Port)
		if err != nil {
			t.Fatal(err)
		}
		got := grpcInfer(t, addr, isvc.Name, irisRows, 4)
		checkSame(t, "V2 gRPC output-0", got, want)
	})

	t.Run("UnnamedRuntime", func(t *testing.T) {
		e := *e
		e.t = t
		// Another team's xgboost InferenceService: modelFormat only, no runtime. The gangboost
		// runtimes are opt-in (autoSelect false) and KServe's own are not installed here, so
		// KServe's controller finds no supporting runtime: no Deployment, no pod.
		isvc := e.inferenceService("inferenceservice.yaml")
		isvc.Name = "iris-unnamed"
		isvc.Spec.Predictor.Model.Runtime = nil
		start := e.create(isvc)
		ctx := context.Background()
		noPredictor := func(ctx context.Context) error {
			pods, err := e.pods(ctx, isvc.Name)
			if err == nil && len(pods) > 0 {
				return fmt.Errorf("InferenceService %s without a runtime got pod %s (runtime image %s)", isvc.Name, pods[0].Name, pods[0].Spec.Containers[0].Image)
			}
			err = e.c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: isvc.Name + "-predictor"}, &appsv1.Deployment{})
			if err == nil {
				return fmt.Errorf("InferenceService %s without a runtime got Deployment %s-predictor", isvc.Name, isvc.Name)
			}
			return nil
		}
		var cur kserveapi.InferenceService
		cluster.WaitFor(e.t, 60*time.Second, "KServe's NoSupportingRuntime on "+isvc.Name, func(ctx context.Context) (bool, error) {
			if err := noPredictor(ctx); err != nil {
				return false, cluster.Abort(err)
			}
			if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &cur); err != nil {
				return false, nil
			}
			f := cur.Status.ModelStatus.LastFailureInfo
			return f != nil && f.Reason == kserveapi.NoSupportingRuntime, nil
		})
		t.Logf("KServe reported %s %s after create: transitionStatus %s, lastFailureInfo %+v",
			cur.Status.ModelStatus.LastFailureInfo.Reason, time.Since(start).Round(time.Millisecond),
			cur.Status.ModelStatus.TransitionStatus, *cur.Status.ModelStatus.LastFailureInfo)
		if cur.Status.ModelStatus.TransitionStatus != kserveapi.InvalidSpec {
			t.Errorf("modelStatus.transitionStatus %s, want %s", cur.Status.ModelStatus.TransitionStatus, kserveapi.InvalidSpec)
		}
		if cur.Spec.Predictor.Model.Runtime != nil || cur.Status.ClusterServingRuntimeName != "" || cur.Status.IsReady() {
			t.Errorf("runtime %v, status.clusterServingRuntimeName %q, Ready %v; want no runtime chosen and not Ready",
				cur.Spec.Predictor.Model.Runtime, cur.Status.ClusterServingRuntimeName, cur.Status.IsReady())
		}
		// The controller's Warning event on the InferenceService says the same.
		var msg string
		cluster.WaitFor(e.t, 90*time.Second, "KServe's Warning event on "+isvc.Name, func(ctx context.Context) (bool, error) {
			evs, err := e.c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=InferenceService,involvedObject.name=" + isvc.Name})
			if err != nil {
				return false, nil
			}
			for _, ev := range evs.Items {
				if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, "no runtime found") {
					msg = ev.Reason + ": " + ev.Message
					return true, nil
				}
			}
			return false, nil
		})
		t.Logf("event %s", msg)
		for _, c := range cur.Status.Conditions {
			t.Logf("InferenceService condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
		if err := noPredictor(ctx); err != nil {
			t.Fatal(err)
		}

		// Opting in: the same InferenceService naming gangboost-xgboost is served.
		patch := client.MergeFrom(cur.DeepCopy())
		runtimeName := "gangboost-xgboost"
		cur.Spec.Predictor.Model.Runtime = &runtimeName
		optIn := time.Now()
		if err := e.c.Client.Patch(ctx, &cur, patch); err != nil {
			t.Fatal(err)
		}
		e.waitReady(isvc.Name, optIn)
		e.checkPredictorPod(isvc.Name, "models/iris/v1")
		var got kserveapi.InferenceService
		if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &got); err != nil {
			t.Fatal(err)
		}
		// KServe v0.15 does not record the runtime it chose in the status.
		if got.Status.ClusterServingRuntimeName != runtimeName && e.c.KServeVersion() != cluster.KServeKubeflowVersion {
			t.Errorf("status.clusterServingRuntimeName %q, want %s", got.Status.ClusterServingRuntimeName, runtimeName)
		}
		addr, err := podrunner.ServiceAddr(ctx, e.c.Kube, namespace, isvc.Name+"-predictor", 80)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "V2 REST output-0 once the runtime is named", restInfer(t, addr, isvc.Name, irisRows, 4), want)
	})

	t.Run("Rollout", func(t *testing.T) {
		e := *e
		e.t = t
		v2 := filepath.Join(e.pvcDir, "models", "iris", "v2")
		e.trainRounds(v2, 3)
		wantV2 := libxgboostPredict(t, v2, irisRows, 4)
		isvc := e.inferenceService("inferenceservice.yaml")
		start := e.create(isvc)
		e.waitReady(isvc.Name, start)
		old := e.checkPredictorPod(isvc.Name, "models/iris/v1")
		// A new model version: KServe rolls the Deployment out with a surge
		// pod (maxUnavailable 0); the new pod takes the host's port over
		// from the old one, and the old ReplicaSet is scaled down once the
		// new pod is ready.
		ctx := context.Background()
		var cur kserveapi.InferenceService
		if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &cur); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		uri := "pvc://" + claim + "/models/iris/v2"
		cur.Spec.Predictor.Model.StorageURI = &uri
		rollout := time.Now()
		if err := e.c.Client.Patch(ctx, &cur, patch); err != nil {
			t.Fatal(err)
		}
		cluster.WaitFor(e.t, 90*time.Second, "the rollout to models/iris/v2", func(ctx context.Context) (bool, error) {
			pods, err := e.pods(ctx, isvc.Name)
			if err != nil || len(pods) != 1 || pods[0].Name == old.Name || !podReady(&pods[0]) {
				return false, nil
			}
			var got kserveapi.InferenceService
			err = e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &got)
			return err == nil && got.Status.IsReady(), nil
		})
		t.Logf("rolled out to v2 in %s", time.Since(rollout).Round(time.Millisecond))
		e.checkPredictorPod(isvc.Name, "models/iris/v2")
		addr, err := podrunner.ServiceAddr(ctx, e.c.Kube, namespace, isvc.Name+"-predictor", 80)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "V2 REST output-0 after the rollout", restInfer(t, addr, isvc.Name, irisRows, 4), wantV2)
	})

	t.Run("MissingModel", func(t *testing.T) {
		e := *e
		e.t = t
		isvc := e.inferenceService("inferenceservice.yaml")
		isvc.Name = "iris-missing"
		uri := "pvc://" + claim + "/models/missing/v1"
		isvc.Spec.Predictor.Model.StorageURI = &uri
		start := e.create(isvc)
		// The runtime exits at start with a last line naming the folder it found no model in
		// (--exit_on_load_failure); FallbackToLogsOnError makes that line the container's
		// termination message, and the pod restarts with back-off. The InferenceService must
		// never be Ready meanwhile.
		const reason = "no model file in"
		notReady := func(ctx context.Context) error {
			var cur kserveapi.InferenceService
			if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &cur); err == nil && cur.Status.IsReady() {
				return fmt.Errorf("InferenceService %s is Ready without a model", isvc.Name)
			}
			return nil
		}
		var msg string
		cluster.WaitFor(e.t, 60*time.Second, "the runtime's termination message on the restarting container", func(ctx context.Context) (bool, error) {
			if err := notReady(ctx); err != nil {
				return false, cluster.Abort(err) // not a reason to keep polling: the test failed
			}
			pods, err := e.pods(ctx, isvc.Name)
			if err != nil || len(pods) == 0 {
				return false, nil
			}
			for _, cs := range pods[0].Status.ContainerStatuses {
				if last := cs.LastTerminationState.Terminated; cs.Name == kserveapi.ContainerName && last != nil && strings.Contains(last.Message, reason) {
					msg = last.Message
					return true, nil
				}
			}
			return false, nil
		})
		t.Logf("container terminated with its reason %s after create: %s", time.Since(start).Round(time.Millisecond), msg)
		if !strings.Contains(msg, "/models/missing/v1") {
			t.Errorf("the termination message %q does not name the model folder", msg)
		}

		// KServe v0.19 reconciles an InferenceService on changes to it and to its Deployment,
		// not to its pods' main containers (whose restarts change neither), so the message
		// reaches status.modelStatus on the next reconcile: any change to the InferenceService,
		// as `kubectl label` makes here, or the Deployment's progress deadline.
		var info *kserveapi.FailureInfo
		poke, lastPoke := 0, time.Time{}
		cluster.WaitFor(e.t, 60*time.Second, "KServe's lastFailureInfo with the runtime's message", func(ctx context.Context) (bool, error) {
			var cur kserveapi.InferenceService
			if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(isvc), &cur); err != nil {
				return false, nil
			}
			if cur.Status.IsReady() {
				return false, cluster.Abort(fmt.Errorf("InferenceService %s is Ready without a model", isvc.Name))
			}
			if f := cur.Status.ModelStatus.LastFailureInfo; f != nil && strings.Contains(f.Message, reason) {
				info = f
				return true, nil
			}
			if time.Since(lastPoke) < 2*time.Second {
				return false, nil
			}
			poke, lastPoke = poke+1, time.Now()
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"gangboost.dev/poke":"%d"}}}`, poke)))
			return false, e.c.Client.Patch(ctx, &cur, patch)
		})
		t.Logf("lastFailureInfo set %s after create, after %d label change(s)", time.Since(start).Round(time.Millisecond), poke)
		if info.Reason != kserveapi.ModelLoadFailed || !strings.Contains(info.Message, "/models/missing/v1") || info.ExitCode != 1 {
			t.Errorf("lastFailureInfo = %+v; want reason ModelLoadFailed, exit code 1, the message naming the model folder", *info)
		}

		// Through several more restarts nothing turns Ready.
		deadline := time.Now().Add(12 * time.Second)
		for time.Now().Before(deadline) {
			if err := notReady(context.Background()); err != nil {
				t.Fatalf("%v:\n%s", err, e.describe(context.Background(), isvc.Name))
			}
			time.Sleep(500 * time.Millisecond)
		}
		var cur kserveapi.InferenceService
		if err := e.c.Client.Get(context.Background(), client.ObjectKeyFromObject(isvc), &cur); err == nil {
			for _, c := range cur.Status.Conditions {
				t.Logf("InferenceService condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			}
			t.Logf("modelStatus: transition %s, lastFailureInfo %+v", cur.Status.ModelStatus.TransitionStatus, cur.Status.ModelStatus.LastFailureInfo)
		}
	})
}

// restInfer posts a V2 REST request for rows of ncol FP32 features and
// returns output-0.
func restInfer(t *testing.T, addr, model string, rows []float32, ncol int) []float32 {
	t.Helper()
	req := map[string]any{"inputs": []map[string]any{{
		"name": "input-0", "datatype": "FP32", "shape": []int{len(rows) / ncol, ncol}, "data": rows,
	}}}
	body, _ := json.Marshal(req)
	url := fmt.Sprintf("http://%s/v2/models/%s/infer", addr, model)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	var out struct {
		ModelName string `json:"model_name"`
		Outputs   []struct {
			Name string    `json:"name"`
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, b)
	}
	if out.ModelName != model || len(out.Outputs) == 0 || out.Outputs[0].Name != "output-0" {
		t.Fatalf("POST %s: answer %s, want model_name %s and output-0", url, b, model)
	}
	return out.Outputs[0].Data
}

// grpcInfer calls inference.GRPCInferenceService/ModelInfer and returns
// output-0.
func grpcInfer(t *testing.T, addr, model string, rows []float32, ncol int) []float32 {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := inference.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, &inference.ModelInferRequest{
		ModelName: model,
		Inputs: []*inference.ModelInferRequest_InferInputTensor{{
			Name: "input-0", Datatype: "FP32", Shape: []int64{int64(len(rows) / ncol), int64(ncol)},
			Contents: &inference.InferTensorContents{Fp32Contents: rows},
		}},
	})
	if err != nil {
		t.Fatalf("ModelInfer on %s: %v", addr, err)
	}
	if len(resp.Outputs) == 0 || resp.Outputs[0].Name != "output-0" {
		t.Fatalf("ModelInfer: outputs %v, want output-0", resp.Outputs)
	}
	if len(resp.RawOutputContents) > 0 {
		raw := resp.RawOutputContents[0]
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out
	}
	return resp.Outputs[0].Contents.GetFp32Contents()
}
