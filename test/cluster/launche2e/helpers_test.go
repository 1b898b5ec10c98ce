package launche2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/test/cluster"
)

const (
	claimName      = "gangboost-models"
	serviceAccount = "launch-xgboostjob"
)

// testEnv is one test's namespace: a claim on a local folder and the component's RBAC from
// manifests/rbac, whose service account the component's pods run as.
type testEnv struct {
	t      *testing.T
	c      *cluster.Cluster
	ns     string
	pvcDir string
	// serviceAccount is what the component's pods run as: the manifest's, unless a test says.
	serviceAccount string
}

func newEnv(t *testing.T, prefix string) *testEnv {
	t.Helper()
	c := cluster.Require(t)
	c.RequirePodMounts(t)
	ctx := context.Background()
	e := &testEnv{t: t, c: c, ns: prefix + "-" + rand.String(5), serviceAccount: serviceAccount}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", e.ns, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.LogTails(30))
		}
		e.cleanup()
	})
	e.pvcDir = e.c.LocalPVC(e.t, e.ns, claimName)
	c.ApplyRBAC(t, "launch-xgboostjob.yaml", e.ns)
	return e
}

func (e *testEnv) cleanup() {
	ctx := context.Background()
	var jobs kubeflowv1.XGBoostJobList
	if err := e.c.Client.List(ctx, &jobs, client.InNamespace(e.ns)); err == nil {
		for i := range jobs.Items {
			_ = e.c.Client.Delete(ctx, &jobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
	}
	trainJobs := &unstructured.UnstructuredList{}
	trainJobs.SetGroupVersionKind(trainJobGVK.GroupVersion().WithKind("TrainJobList"))
	if err := e.c.Client.List(ctx, trainJobs, client.InNamespace(e.ns)); err == nil {
		for i := range trainJobs.Items {
			_ = e.c.Client.Delete(ctx, &trainJobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
	}
	_ = e.c.Kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.c.Kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		e.t.Errorf("cleanup: pods of namespace %s still there after 60s", e.ns)
	}
	_ = e.c.Kube.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
	_ = e.c.Kube.CoreV1().PersistentVolumes().Delete(ctx, e.ns+"-"+claimName, metav1.DeleteOptions{})
}

// step is one execution of the component: its ExecutorInput and where KFP would read its outputs.
type step struct {
	dir    string
	params map[string]any
}

// cudaTrainerImage stands for a user's own build of the trainer image: the steps that ask for GPUs
// name it, since launch-xgboostjob refuses GPUs for its own image (Debian's libxgboost is CPU-only)
// and cannot know another image's build. The process nodes run bin/gangboost-train for it as for
// every image, so a gang of it that starts refuses its GPUs (TestLaunchGPUsTheTrainerCannotUse);
// the other tests are about gangs that cannot be placed.
const cudaTrainerImage = "registry.example.com/gangboost-cuda:0.1.0"

// newStep is the ExecutorInput KFP's driver would build for one task of a run, with the claim
// mounted at /mnt/pvc in the component's pod as in the trainer's, and the trainer's Master port
// free on this machine.
func (e *testEnv) newStep(runID, task string, params map[string]any) *step {
	e.t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		e.t.Fatal(err)
	}
	p := map[string]any{
		"run_id": runID, "task_name": task,
		"namespace": e.ns, "pvc_name": claimName, "pvc_mount_path": "/mnt/pvc",
		"master_port": port, "schedule_timeout_seconds": 120, "model_version": "v1",
		"dataset": "iris", "label": "species", "objective": "multi:softprob", "num_round": 20, "eval_fraction": "0.2",
		"priority_class": "gangboost-training", "queue": "ml-training",
	}
	for k, v := range params {
		p[k] = v
	}
	return &step{params: p}
}

// executorInput writes a fresh output folder and returns {{$}} for it.
func (s *step) executorInput(t *testing.T) string {
	t.Helper()
	s.dir = t.TempDir()
	artifact := func(name, title string) map[string]any {
		return map[string]any{"artifacts": []any{map[string]any{
			"name": name, "type": map[string]any{"schemaTitle": title, "schemaVersion": "0.0.1"},
			"uri": "minio://mlpipeline/v2/artifacts/launch/run/task/" + name,
		}}}
	}
	in := map[string]any{
		"inputs": map[string]any{"parameterValues": s.params},
		"outputs": map[string]any{
			"parameters": map[string]any{
				"model_uri": map[string]any{"outputFile": filepath.Join(s.dir, "model_uri")},
				"job_name":  map[string]any{"outputFile": filepath.Join(s.dir, "job_name")},
			},
			"artifacts": map[string]any{"model": artifact("model", "system.Model"), "metrics": artifact("metrics", "system.Metrics"),
				// A file the component writes: here in the step's folder rather than under /minio.
				"learning_curve": map[string]any{"artifacts": []any{map[string]any{
					"name": "learning_curve", "type": map[string]any{"schemaTitle": "system.HTML", "schemaVersion": "0.0.1"},
					"uri": "file://" + filepath.Join(s.dir, "learning_curve"),
				}}}},
			"outputFile": filepath.Join(s.dir, "executor_output.json"),
		},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// What KFP passes is what its driver produced: it parses strictly.
	if _, err := kfp.ParseExecutorInput(b); err != nil {
		t.Fatalf("test ExecutorInput: %v", err)
	}
	return string(b)
}

// line is one line the component printed, with when the test read it.
type line struct {
	at   time.Time
	text string
}

// run is a finished execution of the component.
type run struct {
	exitCode int
	lines    []line
	started  time.Time
	ended    time.Time
	output   *pipelinespec.ExecutorOutput // nil when no ExecutorOutput was written
}

func (r *run) text() string {
	var b strings.Builder
	for _, l := range r.lines {
		fmt.Fprintf(&b, "  +%6.2fs %s\n", l.at.Sub(r.started).Seconds(), l.text)
	}
	return b.String()
}

// firstLine returns the first line containing all of the substrings.
func (r *run) firstLine(subs ...string) (line, bool) {
	for _, l := range r.lines {
		ok := true
		for _, s := range subs {
			if !strings.Contains(l.text, s) {
				ok = false
				break
			}
		}
		if ok {
			return l, true
		}
	}
	return line{}, false
}

// runComponent runs the component as KFP runs it: a pod under the service account, its
// component.yaml command line with the placeholders resolved, the claim at /mnt/pvc, a deadline.
func (e *testEnv) runComponent(s *step, timeout time.Duration) *run {
	e.t.Helper()
	return e.runComponentUntil(s, timeout, "")
}

// runComponentUntil is runComponent that deletes the pod (the kubelet sends SIGTERM) once the
// component prints a line containing stopAt.
func (e *testEnv) runComponentUntil(s *step, timeout time.Duration, stopAt string) *run {
	e.t.Helper()
	image, argv := cluster.ComponentCommand(e.t, "launch-xgboostjob", s.executorInput(e.t))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stepCtx, stop := context.WithCancel(ctx)
	defer stop()
	r := &run{started: time.Now()}
	pods := &cluster.StepPods{C: e.c, Namespace: e.ns, ServiceAccount: e.serviceAccount}
	code, err := pods.Execute(stepCtx, &localrun.Container{
		Task: "launch-xgboostjob", Image: image, Argv: argv,
		Claims: map[string]string{"/mnt/pvc": claimName}, PipelineRoot: s.dir,
		Output: func(text string) {
			r.lines = append(r.lines, line{at: time.Now(), text: text})
			if stopAt != "" && strings.Contains(text, stopAt) {
				stop()
			}
		},
	})
	r.ended = time.Now()
	if ctx.Err() != nil {
		e.t.Fatalf("component still running after %s:\n%s", timeout, r.text())
	}
	if code < 0 {
		e.t.Fatalf("component pod: %v", err)
	}
	r.exitCode = code
	if b, err := os.ReadFile(filepath.Join(s.dir, "executor_output.json")); err == nil {
		out, err := kfp.ParseExecutorOutput(b)
		if err != nil {
			e.t.Fatalf("ExecutorOutput that KFP's strict parser rejects: %v\n%s", err, b)
		}
		r.output = out
	}
	e.t.Logf("component pod exited %d after %s (%v):\n%s", r.exitCode, r.ended.Sub(r.started).Round(time.Millisecond), err, r.text())
	return r
}

func (e *testEnv) jobs() []kubeflowv1.XGBoostJob {
	e.t.Helper()
	var jobs kubeflowv1.XGBoostJobList
	if err := e.c.Client.List(context.Background(), &jobs, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	return jobs.Items
}

// waitQueueGPUsFree waits until Volcano's queue ml-training counts no GPU allocated: a test
// before may have left a gang on the GPU nodes whose pods are gone but whose allocation
// Volcano's next scheduling session has yet to give back. Tests that assert the queue's
// free GPUs wait for it first.
func (e *testEnv) waitQueueGPUsFree() {
	e.t.Helper()
	var q schedulingv1beta1.Queue
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Client.Get(ctx, client.ObjectKey{Name: "ml-training"}, &q); err != nil {
			return false, nil
		}
		gpus := q.Status.Allocated[corev1.ResourceName("nvidia.com/gpu")]
		return gpus.IsZero(), nil
	})
	if err != nil {
		e.t.Fatalf("queue ml-training still counts GPUs allocated after 60s: %v", q.Status.Allocated)
	}
}
