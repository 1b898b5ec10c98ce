package launche2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

// The TrainJob tests run launch-xgboostjob with job_api trainjob against the real Kubeflow
// Trainer v2 and JobSet controllers (cluster.Options.TrainerV2) and Volcano, on the
// ClusterTrainingRuntime gangboost ships. They live beside the XGBoostJob tests so that every
// TrainJob of the test run is in one test binary: Trainer v2 fixes rank 0's tracker port
// (DMLC_TRACKER_PORT 29500), and the pod runner's pods share this machine's network, so two
// binaries training TrainJobs at once would race for the port.

const (
	// mlQueue is operator-config/volcano's queue.
	mlQueue = "ml-training"
	// trainJobNodes is the gang of the TrainJob tests: a Master and two Workers as launch counts
	// them, three Trainer v2 nodes.
	trainJobNodes = 3
)

var trainJobGVK = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}

// applyTrainingRuntime applies manifests/trainer as make deploy-trainer-runtime does (the
// ClusterTrainingRuntime gangboost-xgboost and the priority class rights Trainer v2.2.0's own
// ClusterRole lacks), so the TrainJobs run on exactly that, then waits until Trainer's TrainJob
// webhook admits a TrainJob on it (a server-side dry run). Cluster-scoped and the same for every
// test, it is applied once and stays.
func applyTrainingRuntime(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	trainingRuntimeOnce.Do(func() {
		ctx := context.Background()
		objs, err := cluster.Kustomize(ctx, filepath.Join(testbin.Root(t), "manifests", "trainer"))
		if err != nil {
			trainingRuntimeErr = err
			return
		}
		if err := cluster.Apply(ctx, c.Client, objs...); err != nil {
			trainingRuntimeErr = fmt.Errorf("apply manifests/trainer: %w", err)
			return
		}
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": trainJobGVK.GroupVersion().String(), "kind": trainJobGVK.Kind,
			"metadata": map[string]any{"name": "admission-probe", "namespace": "default"},
			"spec": map[string]any{
				"runtimeRef": map[string]any{"name": launch.DefaultTrainingRuntime, "kind": "ClusterTrainingRuntime", "apiGroup": trainJobGVK.Group},
				"trainer":    map[string]any{"numNodes": int64(1)},
			},
		}}
		start := time.Now()
		// Trainer's informer retries its refused list with a backoff: the first admissions
		// after the grant can still time out.
		var refused error
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			refused = c.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return refused == nil, nil
		}); err != nil {
			trainingRuntimeErr = fmt.Errorf("a TrainJob on it still refused after %s: %v", time.Since(start).Round(time.Second), refused)
			return
		}
		t.Logf("Trainer admits TrainJobs on %s %s after applying manifests/trainer", launch.DefaultTrainingRuntime, time.Since(start).Round(time.Millisecond))
	})
	if trainingRuntimeErr != nil {
		t.Fatalf("gangboost's ClusterTrainingRuntime: %v", trainingRuntimeErr)
	}
}

var (
	trainingRuntimeOnce sync.Once
	trainingRuntimeErr  error
)

// newTrainJobEnv is newEnv with gangboost's ClusterTrainingRuntime applied.
func newTrainJobEnv(t *testing.T, prefix string) *testEnv {
	t.Helper()
	e := newEnv(t, prefix)
	applyTrainingRuntime(t, e.c)
	return e
}

// trainJobs lists the namespace's TrainJobs.
func (e *testEnv) trainJobs() []unstructured.Unstructured {
	e.t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(trainJobGVK.GroupVersion().WithKind("TrainJobList"))
	if err := e.c.Client.List(context.Background(), l, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// TestLaunchTrainJobTrainsAndAdopts: with job_api trainjob the component creates a TrainJob of
// three nodes on gangboost-xgboost; Trainer v2 makes it a JobSet whose pods carry what its XGBoost
// plugin injects (DMLC_*), Volcano places the gang through the PodGroup Trainer made (minMember 3,
// the queue of the TrainJob's annotation), the three gangboost-train ranks train one model through
// rank 0's tracker, and the component outputs the model as for an XGBoostJob. Run again as a
// retried step, it adopts the finished TrainJob.
func TestLaunchTrainJobTrainsAndAdopts(t *testing.T) {
	requireTrainer(t)
	e := newTrainJobEnv(t, "trainjob")
	runID := uuid.NewString()
	s := e.newStep(runID, "train-iris", map[string]any{"model_name": "iris", "workers": trainJobNodes - 1, "job_api": launch.APITrainJob})
	wantJob := launch.JobName(launch.Identity{RunID: runID, TaskName: "train-iris"})

	r := e.runComponent(s, 5*time.Minute)
	if r.exitCode != 0 {
		t.Fatalf("component exited %d, want 0", r.exitCode)
	}
	for _, want := range [][]string{
		{"created job", wantJob},
		{"PodGroup", fmt.Sprintf("minMember %d, queue %s", trainJobNodes, mlQueue)},
		{fmt.Sprintf("pods bound %d/%d", trainJobNodes, trainJobNodes)},
		{"gang placed"},
		{"job Complete"},
	} {
		if _, ok := r.firstLine(want...); !ok {
			t.Errorf("no progress line with %q", want)
		}
	}
	checkOutputs(t, e, r, wantJob, trainJobNodes)

	jobs := e.trainJobs()
	if len(jobs) != 1 || jobs[0].GetName() != wantJob {
		t.Fatalf("TrainJobs in %s: %d, want one named %s", e.ns, len(jobs), wantJob)
	}
	uid := jobs[0].GetUID()
	if got := jobs[0].GetAnnotations()[kube.RunIDAnnotation]; got != runID {
		t.Errorf("TrainJob annotation %s = %q, want %s", kube.RunIDAnnotation, got, runID)
	}
	if got, _, _ := unstructured.NestedString(jobs[0].Object, "spec", "runtimeRef", "name"); got != launch.DefaultTrainingRuntime {
		t.Errorf("TrainJob runtimeRef %q, want %s", got, launch.DefaultTrainingRuntime)
	}
	checkTrainJobPods(t, e, wantJob)

	// The step retried: same run and task, a new output folder.
	r2 := e.runComponent(s, 2*time.Minute)
	if r2.exitCode != 0 {
		t.Fatalf("retried component exited %d, want 0", r2.exitCode)
	}
	if _, ok := r2.firstLine("adopted job", wantJob); !ok {
		t.Errorf("retried step did not say it adopted %s", wantJob)
	}
	checkOutputs(t, e, r2, wantJob, trainJobNodes)
	if jobs := e.trainJobs(); len(jobs) != 1 || jobs[0].GetUID() != uid {
		t.Errorf("after the retry: %d TrainJobs, want the one TrainJob %s (uid %s)", len(jobs), wantJob, uid)
	}
}

var (
	modelHash    = regexp.MustCompile(`training finished.*model_sha256[=":]+\s*"?([0-9a-f]{64})`)
	worldOfThree = regexp.MustCompile(`tracker started.*world_size[=":]+\s*3\b`)
)

// checkTrainJobPods holds the finished TrainJob's pods (JobSet keeps them) to what Trainer v2
// and launch put on them: Volcano's scheduler and group, Trainer v2's DMLC_* env for the three
// ranks, the Istio opt-out and the pod security context launch sets; and their logs to one model
// trained by a world of three.
func checkTrainJobPods(t *testing.T, e *testEnv, job string) {
	t.Helper()
	ctx := context.Background()
	l, err := e.c.Kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.JobSetNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != trainJobNodes {
		t.Fatalf("TrainJob %s has %d pods, want %d", job, len(l.Items), trainJobNodes)
	}
	hashes := map[string]bool{}
	sawWorld := false
	for _, p := range l.Items {
		if p.Spec.SchedulerName != "volcano" || p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] != job {
			t.Errorf("pod %s: schedulerName %q, group annotation %q; want volcano, %s",
				p.Name, p.Spec.SchedulerName, p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey], job)
		}
		if p.Annotations[kube.IstioInjectAnnotation] != "false" {
			t.Errorf("pod %s: annotation %s = %q, want \"false\"", p.Name, kube.IstioInjectAnnotation, p.Annotations[kube.IstioInjectAnnotation])
		}
		if sc := p.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != 65532 {
			t.Errorf("pod %s: securityContext %+v, want fsGroup 65532", p.Name, sc)
		}
		env := map[string]corev1.EnvVar{}
		for _, v := range p.Spec.Containers[0].Env {
			env[v.Name] = v
		}
		// What Trainer v2's XGBoost plugin injects (and gangboost-train reads): rank 0 of the
		// headless Service named after the job, a world of three, the Job's completion index.
		if got, want := env["DMLC_TRACKER_URI"].Value, job+"-node-0-0."+job; got != want {
			t.Errorf("pod %s: DMLC_TRACKER_URI = %q, want %q", p.Name, got, want)
		}
		if got := env["DMLC_NUM_WORKER"].Value; got != fmt.Sprint(trainJobNodes) {
			t.Errorf("pod %s: DMLC_NUM_WORKER = %q, want %d", p.Name, got, trainJobNodes)
		}
		if got := env["DMLC_TRACKER_PORT"].Value; got != fmt.Sprint(kube.TrainerTrackerPort) {
			t.Errorf("pod %s: DMLC_TRACKER_PORT = %q, want %d", p.Name, got, kube.TrainerTrackerPort)
		}
		if ref := env["DMLC_TASK_ID"].ValueFrom; ref == nil || ref.FieldRef == nil || !strings.Contains(ref.FieldRef.FieldPath, "job-completion-index") {
			t.Errorf("pod %s: DMLC_TASK_ID = %+v, want the Job's completion index", p.Name, env["DMLC_TASK_ID"])
		}
		b, err := e.c.Kube.CoreV1().Pods(e.ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: kube.TrainerNode}).DoRaw(ctx)
		if err != nil {
			t.Errorf("logs of %s: %v", p.Name, err)
			continue
		}
		m := modelHash.FindStringSubmatch(string(b))
		if m == nil {
			t.Errorf("pod %s logged no model_sha256 (did not finish training)", p.Name)
			continue
		}
		hashes[m[1]] = true
		sawWorld = sawWorld || worldOfThree.Match(b)
	}
	// Ranks training alone on their share of the data would not agree on the model.
	if len(hashes) != 1 {
		t.Errorf("ranks report %d different models, want one: %v", len(hashes), hashes)
	}
	if !sawWorld {
		t.Errorf("no rank logged its tracker with world_size %d", trainJobNodes)
	}
}

// TestLaunchTrainJobUnschedulable: a TrainJob gang of three one-GPU nodes on two one-GPU nodes.
// Volcano keeps the PodGroup Trainer made Pending; the component says why (the gang's GPUs
// against the queue's room) and at its deadline deletes the TrainJob and fails with the reason.
func TestLaunchTrainJobUnschedulable(t *testing.T) {
	e := newTrainJobEnv(t, "trainjob-nofit")
	e.waitQueueGPUsFree()
	runID := uuid.NewString()
	const timeout = 20 * time.Second
	s := e.newStep(runID, "train", map[string]any{
		"model_name": "big", "workers": trainJobNodes - 1, "gpus": 1, "image": cudaTrainerImage, "job_api": launch.APITrainJob,
		"schedule_timeout_seconds": int(timeout.Seconds()),
	})
	job := launch.JobName(launch.Identity{RunID: runID, TaskName: "train"})
	r := e.runComponent(s, 2*time.Minute)
	checkGangOfThreeGPUsNotPlaced(t, r, timeout, "nvidia.com/gpu 2 free")
	for _, j := range e.trainJobs() {
		if j.GetName() == job && j.GetDeletionTimestamp() == nil {
			t.Errorf("TrainJob %s still there after the deadline", job)
		}
	}
	// The TrainJob's JobSet and PodGroup go with it (owner references).
	cluster.WaitFor(t, 60*time.Second, "PodGroup "+job+" gone", func(ctx context.Context) (bool, error) {
		var pg schedulingv1beta1.PodGroup
		err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: job}, &pg)
		return apierrors.IsNotFound(err), nil
	})
}

// TestLaunchTrainJobTrainerFails: trainers that fail in their pods (the training data is not on
// the claim) fail the TrainJob through its JobSet, and the component fails with the TrainJob's
// reason, the failing pod, its exit code and log tail.
func TestLaunchTrainJobTrainerFails(t *testing.T) {
	requireTrainer(t)
	e := newTrainJobEnv(t, "trainjob-fail")
	s := e.newStep(uuid.NewString(), "train", map[string]any{
		"model_name": "bad", "workers": trainJobNodes - 1, "job_api": launch.APITrainJob,
		"dataset": "", "train_data": "datasets/missing/train.csv",
	})
	r := e.runComponent(s, 3*time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	all := r.text()
	if !strings.Contains(all, "job Failed") {
		t.Errorf("no progress line with the TrainJob's Failed condition")
	}
	if !strings.Contains(all, "-node-0-") || !strings.Contains(all, "exited 1 (Error)") {
		t.Errorf("failure does not name a failing trainer pod and its exit code")
	}
	if !strings.Contains(all, "log tail:") || !strings.Contains(all, "datasets/missing/train.csv: no such file or directory") {
		t.Errorf("failure does not show the failing pod's log tail")
	}
}
