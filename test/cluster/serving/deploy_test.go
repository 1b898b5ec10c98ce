package serving

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// deployServiceAccount is the component's ServiceAccount in manifests/rbac/deploy-inferenceservice.yaml.
const deployServiceAccount = "deploy-inferenceservice"

// deployEnv is a namespace of its own with a claim on a local folder, the runtimes and the
// component's RBAC from manifests/rbac, whose service account the component's pods run as.
type deployEnv struct {
	t      *testing.T
	c      *cluster.Cluster
	ns     string
	pvcDir string
	// serviceAccount runs the component's pods: deployServiceAccount, which the Role binds.
	serviceAccount string
}

func newDeployEnv(t *testing.T) *deployEnv {
	t.Helper()
	c := cluster.Require(t)
	ns := "deploy-" + rand.String(5)
	if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	e := deployEnvIn(t, ns)
	c.ApplyRBAC(t, "deploy-inferenceservice.yaml", e.ns)
	return e
}

// deployEnvIn readies namespace ns (which exists) for serving steps: the runtimes, a claim on a
// local folder, the namespace's removal at the end; no RBAC.
func deployEnvIn(t *testing.T, ns string) *deployEnv {
	t.Helper()
	c := cluster.Require(t)
	c.RequirePodMounts(t)
	for _, port := range []int{8080, 8081} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d on 127.0.0.1: %v; the runtime's pods listen there (manifests/clusterservingruntime.yaml) on the shared host network", port, err)
		}
		l.Close()
	}
	e := &deployEnv{t: t, c: c, ns: ns, serviceAccount: deployServiceAccount}
	if err := cluster.Apply(context.Background(), c.Client, decodeManifest(t, "clusterservingruntime.yaml")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cleanup)
	e.pvcDir = c.LocalPVC(t, e.ns, claim)
	return e
}

// cleanup removes the namespace, its InferenceServices first (see removeServices).
func (e *deployEnv) cleanup() {
	ctx := context.Background()
	e.removeServices()
	_ = e.c.Kube.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
	_ = e.c.Kube.CoreV1().PersistentVolumes().Delete(ctx, e.ns+"-"+claim, metav1.DeleteOptions{})
}

// removeServices deletes the namespace's InferenceServices and waits for their pods to be gone:
// the runtime's host ports are then free for the next one.
func (e *deployEnv) removeServices() {
	ctx := context.Background()
	var list kserveapi.InferenceServiceList
	if err := e.c.Client.List(ctx, &list, client.InNamespace(e.ns)); err == nil {
		for i := range list.Items {
			if e.t.Failed() {
				e.t.Logf("InferenceService %s at the end: %+v", list.Items[i].Name, list.Items[i].Status)
			}
			_ = e.c.Client.Delete(ctx, &list.Items[i], client.PropagationPolicy(metav1.DeletePropagationForeground))
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		var isvcs kserveapi.InferenceServiceList
		if err := e.c.Client.List(ctx, &pods, client.InNamespace(e.ns)); err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		err := e.c.Client.List(ctx, &isvcs, client.InNamespace(e.ns))
		return err == nil && len(isvcs.Items) == 0, nil
	})
	if err != nil {
		e.t.Errorf("InferenceServices or pods of namespace %s still there 90s after their deletion", e.ns)
	}
}

// train writes an Iris model of rounds rounds to models/iris/<version> on the claim.
func (e *deployEnv) train(version string, rounds int) string {
	e.t.Helper()
	dir := filepath.Join(e.pvcDir, "models", "iris", version)
	(&servingEnv{t: e.t}).trainRounds(dir, rounds)
	return dir
}

// deployRun is one finished execution of the component.
type deployRun struct {
	exitCode int
	log      string
	took     time.Duration
	output   *pipelinespec.ExecutorOutput // nil when no ExecutorOutput was written
	files    map[string]string            // the output parameter files
}

func (r *deployRun) param(name string) string {
	return r.output.GetParameterValues()[name].GetStringValue()
}

// runDeploy runs the component as KFP runs it: a pod under the component's service account, its
// component.yaml command line with the placeholders resolved for an ExecutorInput of params
// (namespace left to the step's own), a deadline.
func (e *deployEnv) runDeploy(params map[string]any, timeout time.Duration) *deployRun {
	e.t.Helper()
	outDir := e.t.TempDir()
	outputs := deploy.OutputNames
	outParams := map[string]any{}
	for _, o := range outputs {
		outParams[o] = map[string]any{"outputFile": filepath.Join(outDir, o)}
	}
	in, err := json.Marshal(map[string]any{
		"inputs":  map[string]any{"parameterValues": params},
		"outputs": map[string]any{"parameters": outParams, "outputFile": filepath.Join(outDir, "executor_output.json")},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := kfp.ParseExecutorInput(in); err != nil {
		e.t.Fatalf("test ExecutorInput: %v", err)
	}
	image, argv := cluster.ComponentCommand(e.t, "deploy-inferenceservice", string(in))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var b strings.Builder
	start := time.Now()
	pods := &cluster.StepPods{C: e.c, Namespace: e.ns, ServiceAccount: e.serviceAccount}
	code, err := pods.Execute(ctx, &localrun.Container{
		Task: "deploy-inferenceservice", Image: image, Argv: argv, PipelineRoot: outDir, Claims: map[string]string{"/mnt/pvc": claim},
		Output: func(line string) { fmt.Fprintf(&b, "  +%6.2fs %s\n", time.Since(start).Seconds(), line) },
	})
	r := &deployRun{log: b.String(), took: time.Since(start), files: map[string]string{}, exitCode: code}
	if ctx.Err() != nil {
		e.t.Fatalf("component still running after %s:\n%s", timeout, r.log)
	}
	if code < 0 {
		e.t.Fatalf("component pod: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(outDir, "executor_output.json")); err == nil {
		out, err := kfp.ParseExecutorOutput(data)
		if err != nil {
			e.t.Fatalf("ExecutorOutput that KFP's strict parser rejects: %v\n%s", err, data)
		}
		r.output = out
	}
	for _, o := range outputs {
		if data, err := os.ReadFile(filepath.Join(outDir, o)); err == nil {
			r.files[o] = string(data)
		}
	}
	e.t.Logf("component pod exited %d after %s (%v):\n%s", r.exitCode, r.took.Round(time.Millisecond), err, r.log)
	return r
}

// checkOutputs checks a successful run's ExecutorOutput: url is the in-cluster address of the
// predictor Service, external_url KServe's status.url, no gRPC address on the REST runtime, and
// each value also in its output file.
func (e *deployEnv) checkOutputs(r *deployRun, name string) {
	e.t.Helper()
	e.checkOutputsGRPC(r, name, "")
}

// checkOutputsGRPC is checkOutputs for a runtime that exposes gRPC at grpcAddress.
func (e *deployEnv) checkOutputsGRPC(r *deployRun, name, grpcAddress string) {
	e.t.Helper()
	if r.exitCode != 0 || r.output == nil {
		e.t.Fatalf("component exited %d with ExecutorOutput %v", r.exitCode, r.output)
	}
	var isvc kserveapi.InferenceService
	if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &isvc); err != nil {
		e.t.Fatal(err)
	}
	// The stable predictor is named (after the model version it was created with), so that a
	// promotion can keep it answering at its address while the address moves; KServe v0.15 has
	// no named predictors, and deploy leaves it unnamed there.
	named := namedPredictors(e.c)
	if named != (isvc.Spec.Predictor.Name != "") {
		e.t.Errorf("InferenceService %s: stable predictor named %q on KServe %s, want a name: %v", name, isvc.Spec.Predictor.Name, e.c.KServeVersion(), named)
	}
	want := map[string]string{
		"url":          fmt.Sprintf("http://%s.%s.svc.cluster.local", predictorObject(e.c, name, isvc.Spec.Predictor.Name), e.ns),
		"external_url": isvc.Status.URL,
		"grpc_address": grpcAddress,
		"model_name":   name,
	}
	if isvc.Status.Address == nil || isvc.Status.Address.URL != want["url"] {
		e.t.Errorf("status.address = %+v, want url %s", isvc.Status.Address, want["url"])
	}
	if want["external_url"] == "" {
		e.t.Error("InferenceService has no status.url")
	}
	for k, v := range want {
		if _, set := r.output.GetParameterValues()[k]; !set || r.param(k) != v {
			e.t.Errorf("ExecutorOutput %s = %q (set %v), want %q", k, r.param(k), set, v)
		}
		if r.files[k] != v {
			e.t.Errorf("output file %s = %q, want %q", k, r.files[k], v)
		}
	}
}

// namedPredictors reports whether the KServe of c names predictors (v0.20; not Kubeflow 1.11's
// v0.15).
func namedPredictors(c *cluster.Cluster) bool {
	return c.KServeVersion() != cluster.KServeKubeflowVersion
}

// predictorObject is KServe's name of the Deployment and Service of isvc's stable predictor, which
// deploy names (named, after its model version) where KServe names predictors.
func predictorObject(c *cluster.Cluster, isvc, named string) string {
	if !namedPredictors(c) || named == "" {
		return isvc + "-predictor"
	}
	return isvc + "-" + named + "-predictor"
}

// inferAt calls the model through the Service the url output names (http://<svc>.<ns>.svc...,
// port 80), as evaluate would, reached by the pod runner's Service mapping.
func (e *deployEnv) inferAt(rawURL, model string) []float32 {
	e.t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		e.t.Fatal(err)
	}
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) < 3 || parts[2] != "svc" {
		e.t.Fatalf("url %s does not name a Service (<name>.<namespace>.svc...)", rawURL)
	}
	port := int32(80)
	if p := u.Port(); p != "" {
		fmt.Sscan(p, &port)
	}
	addr, err := podrunner.ServiceAddr(context.Background(), e.c.Kube, parts[1], parts[0], port)
	if err != nil {
		e.t.Fatal(err)
	}
	return restInfer(e.t, addr, model, irisRows, 4)
}

// predictorPod is the one running predictor pod of the service, and the model it serves.
func (e *deployEnv) predictorPod(name string) (corev1.Pod, string) {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.Client.List(context.Background(), &pods, client.InNamespace(e.ns), client.MatchingLabels{isvcLabel: name}); err != nil {
		e.t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		e.t.Fatalf("%d live pods of InferenceService %s, want 1", len(live), name)
	}
	return live[0], live[0].Annotations[kube.SourceURIAnnotation]
}

// TestDeployComponent runs deploy-inferenceservice against KServe's controller with its own
// service account: it creates the InferenceService for a trained model and outputs a URL that
// serves the trainer's predictions; deployed again with a second model it rolls the service out
// to it; deployed with a model folder that holds no model it fails at its deadline saying why.
// rolloutRuntimeArgs are the runtime_args of TestDeployComponent's rollout.
const rolloutRuntimeArgs = "--enable_batching=true"

func TestDeployComponent(t *testing.T) {
	e := newDeployEnv(t)
	v1Dir, v2Dir := e.train("v1", 20), e.train("v2", 3)
	wantV1, wantV2 := libxgboostPredict(t, v1Dir, irisRows, 4), libxgboostPredict(t, v2Dir, irisRows, 4)
	if err := os.MkdirAll(filepath.Join(e.pvcDir, "models", "missing", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	params := func(uri string, timeout int) map[string]any {
		return map[string]any{
			"name": "iris", "model_uri": uri, "run_id": "run-" + e.ns, "timeout_seconds": timeout,
			"runtime": "gangboost-xgboost", "protocol_version": "v2", "cpu": "500m", "memory": "256Mi",
			"min_replicas": 1, "max_replicas": 1, "pvc_name": claim, "pvc_mount_path": "/mnt/pvc",
			// Rolled out directly: on process nodes every predictor pod listens on the host's
			// port 8080, so a challenger could not run beside its champion here (the real node's
			// test promotes one).
			"promotion": "replace",
		}
	}

	t.Run("Create", func(t *testing.T) {
		e := *e
		e.t = t
		r := e.runDeploy(params("pvc://"+claim+"/models/iris/v1", 120), 3*time.Minute)
		e.checkOutputs(r, "iris")
		if _, uri := e.predictorPod("iris"); uri != "pvc://"+claim+"/models/iris/v1" {
			t.Errorf("the predictor pod serves %s", uri)
		}
		checkSame(t, "V2 REST output-0 at the url output", e.inferAt(r.param("url"), "iris"), wantV1)
		var isvc kserveapi.InferenceService
		if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
			t.Fatal(err)
		}
		if isvc.Spec.Predictor.Annotations[kube.ModelURIAnnotation] != "pvc://"+claim+"/models/iris/v1" || isvc.Spec.Predictor.Annotations[kube.RunIDAnnotation] != "run-"+e.ns {
			t.Errorf("annotations = %v", isvc.Annotations)
		}
		applied := false
		for _, mf := range isvc.ManagedFields {
			if mf.Manager == kube.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
				applied = true
			}
		}
		if !applied {
			t.Errorf("no server-side apply by %s in managedFields", kube.FieldManager)
		}
		for _, want := range []string{"created InferenceService " + e.ns + "/iris", "pods ready 1/1", "condition Ready=True", "iris ready after"} {
			if !strings.Contains(r.log, want) {
				t.Errorf("progress lacks %q", want)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("Rollout", func(t *testing.T) {
		e := *e
		e.t = t
		old, _ := e.predictorPod("iris")
		p := params("pvc://"+claim+"/models/iris/v2", 120)
		p["runtime_args"] = rolloutRuntimeArgs
		r := e.runDeploy(p, 3*time.Minute)
		e.checkOutputs(r, "iris")
		pod, uri := e.predictorPod("iris")
		if pod.Name == old.Name || uri != "pvc://"+claim+"/models/iris/v2" {
			t.Errorf("after the rollout pod %s serves %s (before: %s)", pod.Name, uri, old.Name)
		}
		// runtime_args reach the runtime after the ClusterServingRuntime's own (KServe appends
		// the model's args), so they decide.
		for _, c := range pod.Spec.Containers {
			if c.Name == "kserve-container" && (len(c.Args) < 2 || c.Args[0] != "--model_name=iris" || c.Args[len(c.Args)-1] != rolloutRuntimeArgs) {
				t.Errorf("kserve-container args %q: want the runtime's, then runtime_args' %s", c.Args, rolloutRuntimeArgs)
			}
		}
		checkSame(t, "V2 REST output-0 after the rollout", e.inferAt(r.param("url"), "iris"), wantV2)
		if !strings.Contains(r.log, "rolling InferenceService "+e.ns+"/iris out from pvc://"+claim+"/models/iris/v1 to pvc://"+claim+"/models/iris/v2") {
			t.Error("progress does not say it rolls out from v1 to v2")
		}
	})
	if t.Failed() {
		return
	}

	// The same model again from another run: nothing the pods serve changes, so nothing restarts
	// (KServe copies the InferenceService's annotations into the pods: the run annotation keeps
	// naming the run that deployed this model), and the step is done at once.
	t.Run("Redeploy", func(t *testing.T) {
		e := *e
		e.t = t
		before, _ := e.predictorPod("iris")
		p := params("pvc://"+claim+"/models/iris/v2", 60)
		p["run_id"], p["runtime_args"] = "second-run", rolloutRuntimeArgs
		r := e.runDeploy(p, 2*time.Minute)
		e.checkOutputs(r, "iris")
		// Done at once: nothing was rolled out or waited for (the step's own lines say so; how
		// long it took is the machine's business).
		if !strings.Contains(r.log, "InferenceService "+e.ns+"/iris already has this spec") || strings.Contains(r.log, "rolling InferenceService") ||
			strings.Contains(r.log, "pods ready 0/1") {
			t.Errorf("redeploying an unchanged model changed or waited for the predictor:\n%s", r.log)
		}
		var isvc kserveapi.InferenceService
		if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
			t.Fatal(err)
		}
		if got := isvc.Spec.Predictor.Annotations[kube.RunIDAnnotation]; got != "run-"+e.ns {
			t.Errorf("run annotation %q after the redeploy, want the run that deployed v2 (run-%s)", got, e.ns)
		}
		if after, _ := e.predictorPod("iris"); after.Name != before.Name {
			t.Errorf("the redeploy of the same model restarted the predictor: pod %s, before %s", after.Name, before.Name)
		}
		checkSame(t, "V2 REST output-0 after the redeploy", e.inferAt(r.param("url"), "iris"), wantV2)
	})

	// A version replaced on purpose (launch-xgboostjob's overwrite=true): the same model_uri with
	// new bytes. The deploy step reads their sha256 from metadata.json on the claim it mounts; the
	// pods roll onto them and answer as the new file predicts.
	t.Run("Overwrite", func(t *testing.T) {
		e := *e
		e.t = t
		e.removeServices()
		v3Dir := e.train("v3", 20)
		uri := "pvc://" + claim + "/models/iris/v3"
		r := e.runDeploy(params(uri, 120), 3*time.Minute)
		e.checkOutputs(r, "iris")
		checkSame(t, "V2 REST output-0 before the overwrite", e.inferAt(r.param("url"), "iris"), libxgboostPredict(t, v3Dir, irisRows, 4))
		before, _ := e.predictorPod("iris")
		// v2's model published over v3, as a trainer with --overwrite does.
		md, err := modeldir.ReadMetadata(v2Dir)
		if err != nil {
			t.Fatal(err)
		}
		model, err := os.ReadFile(filepath.Join(v2Dir, md.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := modeldir.Publish(v3Dir, md.ModelFile, model, md, true); err != nil {
			t.Fatal(err)
		}
		p := params(uri, 120)
		p["run_id"] = "overwrite-run"
		r = e.runDeploy(p, 3*time.Minute)
		e.checkOutputs(r, "iris")
		after, _ := e.predictorPod("iris")
		if after.UID == before.UID || after.Annotations[kube.ModelSHA256Annotation] != md.ModelSHA256 {
			t.Errorf("after the overwrite pod %s (uid %s) carries sha256 %q; want a new pod with %s (before: %s)",
				after.Name, after.UID, after.Annotations[kube.ModelSHA256Annotation], md.ModelSHA256, before.UID)
		}
		if !strings.Contains(r.log, "rolling InferenceService "+e.ns+"/iris out to the new bytes of "+uri) {
			t.Errorf("progress does not say it rolls out to the new bytes:\n%s", r.log)
		}
		checkSame(t, "V2 REST output-0 after the overwrite", e.inferAt(r.param("url"), "iris"), wantV2)
	})

	// A model folder without a model: the runtime exits naming it (--exit_on_load_failure in
	// manifests/clusterservingruntime.yaml, its last line the termination message) and restarts
	// with back-off; the step fails once it crash-loops, with that message, well before its
	// deadline, and writes no outputs.
	t.Run("MissingModel", func(t *testing.T) {
		e := *e
		e.t = t
		r := e.runDeploy(params("pvc://"+claim+"/models/missing/v1", 600), 12*time.Minute)
		if r.exitCode != 1 || r.output != nil {
			t.Fatalf("component exited %d with ExecutorOutput %v; want 1 and none", r.exitCode, r.output)
		}
		// The crash loop ends the wait, not the (ten-minute) deadline.
		if strings.Contains(r.log, "deadline of") {
			t.Errorf("the step waited out its deadline; a crash-looping runtime should end the wait")
		}
		for _, want := range []string{
			"iris is not ready: the runtime keeps failing: pod iris-", // the stable predictor keeps the name it was created with
			"-predictor-",
			"(CrashLoopBackOff, ",
			"gangboost-runtime: model load failed at start (--exit_on_load_failure): model iris is not ready: no model file in " + filepath.Join(e.pvcDir, "models", "missing", "v1"),
			"condition PredictorReady=",
			"modelStatus: transitionStatus",
			"(model pvc://" + claim + "/models/missing/v1)",
		} {
			if !strings.Contains(r.log, want) {
				t.Errorf("failure output lacks %q", want)
			}
		}
	})

	// The gRPC runtime: the predictor Service's port is gRPC (h2c), and grpc_address names it.
	t.Run("GRPC", func(t *testing.T) {
		e := *e
		e.t = t
		e.removeServices()
		p := params("pvc://"+claim+"/models/iris/v2", 120)
		p["name"], p["runtime"], p["protocol_version"] = "iris-grpc", "gangboost-xgboost-grpc", "grpc-v2"
		r := e.runDeploy(p, 3*time.Minute)
		want := fmt.Sprintf("%s.%s.svc.cluster.local:80", predictorObject(e.c, "iris-grpc", "v2"), e.ns)
		e.checkOutputsGRPC(r, "iris-grpc", want)
		host, port, _ := strings.Cut(r.param("grpc_address"), ":")
		var portNum int32
		fmt.Sscan(port, &portNum)
		addr, err := podrunner.ServiceAddr(context.Background(), e.c.Kube, e.ns, strings.Split(host, ".")[0], portNum)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "V2 gRPC output-0 at the grpc_address output", grpcInfer(t, addr, "iris-grpc", irisRows, 4), wantV2)
	})

	// A runtime that does not exist: KServe marks the spec invalid and the step fails at once,
	// with KServe's reason, rather than at its deadline.
	t.Run("UnknownRuntime", func(t *testing.T) {
		e := *e
		e.t = t
		p := params("pvc://"+claim+"/models/iris/v2", 600)
		p["name"], p["runtime"] = "iris-typo", "gangboost-xgbost"
		r := e.runDeploy(p, 12*time.Minute)
		if r.exitCode != 1 || r.output != nil {
			t.Fatalf("component exited %d with ExecutorOutput %v; want 1 and none", r.exitCode, r.output)
		}
		// KServe's InvalidSpec ends the wait, not the (ten-minute) deadline.
		if strings.Contains(r.log, "deadline of") {
			t.Errorf("the step waited out its deadline; KServe's InvalidSpec should end the wait at once")
		}
		for _, want := range []string{"iris-typo is not ready: KServe rejects the predictor: RuntimeNotRecognized", "modelStatus: transitionStatus InvalidSpec", "no predictor pods"} {
			if !strings.Contains(r.log, want) {
				t.Errorf("failure output lacks %q", want)
			}
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		user := "system:serviceaccount:" + e.ns + ":" + deployServiceAccount
		for _, tc := range []struct {
			group, resource, verb string
			allowed               bool
		}{
			{"serving.kserve.io", "inferenceservices", "create", true},
			{"serving.kserve.io", "inferenceservices", "patch", true},
			{"serving.kserve.io", "inferenceservices", "watch", true},
			{"serving.kserve.io", "inferenceservices", "delete", false},
			{"serving.kserve.io", "inferenceservices", "update", false},
			{"serving.kserve.io", "servingruntimes", "create", false},
			{"", "pods", "watch", true},
			{"", "pods", "delete", false},
			{"", "services", "get", true},
			{"", "services", "create", false},
			{"", "secrets", "get", false},
		} {
			ra := &authorizationv1.ResourceAttributes{Namespace: e.ns, Group: tc.group, Resource: tc.resource, Verb: tc.verb}
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: ra}}
			res, err := e.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status.Allowed != tc.allowed {
				t.Errorf("%s %s.%s: allowed %v, want %v", tc.verb, tc.resource, tc.group, res.Status.Allowed, tc.allowed)
			}
		}
		other := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "default", Group: "serving.kserve.io", Resource: "inferenceservices", Verb: "create"}}}
		res, err := e.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), other, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed {
			t.Error("the component may create InferenceServices outside its namespace")
		}
	})

	// The permissions above are the ones the step runs with: under the namespace's default
	// service account, which no Role binds, the step fails with the API server's refusal and
	// creates nothing.
	t.Run("RefusedWithoutItsRole", func(t *testing.T) {
		e := *e
		e.t = t
		e.serviceAccount = "default"
		p := params("pvc://"+claim+"/models/iris/v2", 60)
		p["name"] = "iris-norbac"
		r := e.runDeploy(p, 2*time.Minute)
		if r.exitCode == 0 || r.output != nil {
			t.Fatalf("component exited %d with ExecutorOutput %v; want a failure without outputs", r.exitCode, r.output)
		}
		refused := false
		for _, line := range strings.Split(r.log, "\n") {
			if strings.Contains(line, "forbidden") && strings.Contains(line, "system:serviceaccount:"+e.ns+":default") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("no line names the API server's refusal of the default service account:\n%s", r.log)
		}
		var isvc kserveapi.InferenceService
		if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "iris-norbac"}, &isvc); !apierrors.IsNotFound(err) {
			t.Errorf("InferenceService iris-norbac after the refused step: %v; want not found", err)
		}
	})
}
