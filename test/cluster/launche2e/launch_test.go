package launche2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

func requireTrainer(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(testbin.Dir(t), "gangboost-train")); err != nil {
		t.Fatalf("trainer not built (run `make build`, or set GANGBOOST_BIN_DIR): %v", err)
	}
}

// TestLaunchTrainsAndAdopts: the component creates a Master + Worker XGBoostJob, Volcano places
// the gang, the trainer writes the model to the claim and the component outputs the Model
// artifact, metrics, model_uri and job_name. Run again as a retried step, it adopts the finished
// job instead of creating a second one. A same-named job of another step is refused.
func TestLaunchTrainsAndAdopts(t *testing.T) {
	requireTrainer(t)
	e := newEnv(t, "launch")
	runID := uuid.NewString()
	s := e.newStep(runID, "train-iris", map[string]any{"model_name": "iris", "workers": 1})
	wantJob := launch.JobName(launch.Identity{RunID: runID, TaskName: "train-iris"})

	r := e.runComponent(s, 4*time.Minute)
	if r.exitCode != 0 {
		t.Fatalf("component exited %d, want 0", r.exitCode)
	}
	for _, want := range [][]string{{"created job", wantJob}, {"PodGroup", "minMember 2, queue ml-training"}, {"pods bound 2/2"}, {"gang placed"}, {"job Succeeded"}} {
		if _, ok := r.firstLine(want...); !ok {
			t.Errorf("no progress line with %q", want)
		}
	}
	checkOutputs(t, e, r, wantJob, 2)

	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].Name != wantJob {
		t.Fatalf("XGBoostJobs in %s: %d, want one named %s", e.ns, len(jobs), wantJob)
	}
	uid := jobs[0].UID
	if jobs[0].Annotations[kube.RunIDAnnotation] != runID {
		t.Errorf("job annotations %v, want run id %s", jobs[0].Annotations, runID)
	}
	// The operator deletes the PodGroup once the job is done; its spec is in the progress lines.

	// The step retried: same run and task, a new output folder.
	r2 := e.runComponent(s, 2*time.Minute)
	if r2.exitCode != 0 {
		t.Fatalf("retried component exited %d, want 0", r2.exitCode)
	}
	if _, ok := r2.firstLine("adopted job", wantJob); !ok {
		t.Errorf("retried step did not say it adopted %s", wantJob)
	}
	checkOutputs(t, e, r2, wantJob, 2)
	jobs = e.jobs()
	if len(jobs) != 1 || jobs[0].UID != uid {
		t.Errorf("after the retry: %d XGBoostJobs (first uid %v), want the one job %s", len(jobs), uid, wantJob)
	}

	// Another run into the same version: refused before any job is created, naming the version.
	again := e.newStep(uuid.NewString(), "train-iris", map[string]any{"model_name": "iris", "workers": 1})
	r4 := e.runComponent(again, 2*time.Minute)
	if r4.exitCode == 0 || r4.output != nil {
		t.Fatalf("a second run into iris/v1: exit %d, output %v; want a refusal", r4.exitCode, r4.output)
	}
	if _, ok := r4.firstLine("model version iris/v1 exists", "written by job "+wantJob, "no job was created"); !ok {
		t.Errorf("no refusal naming iris/v1 and the job that wrote it:\n%s", r4.text())
	}
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0].UID != uid {
		t.Errorf("after the refused run: %d XGBoostJobs, want only %s", len(jobs), wantJob)
	}

	// Another step whose job name is taken by a job it did not create.
	other := e.newStep(uuid.NewString(), "train-iris", map[string]any{"model_name": "iris2"})
	squatter := jobs[0].DeepCopy()
	squatter.ObjectMeta = jobs[0].ObjectMeta
	squatter.ResourceVersion, squatter.UID, squatter.CreationTimestamp = "", "", jobs[0].CreationTimestamp
	squatter.Name = launch.JobName(launch.Identity{RunID: other.params["run_id"].(string), TaskName: "train-iris"})
	squatter.Status = jobs[0].Status
	squatter.Status.Conditions = nil
	squatter.ManagedFields = nil
	// Suspended, so the operator starts nothing for it.
	suspend := true
	squatter.Spec.RunPolicy.Suspend = &suspend
	if err := e.c.Client.Create(context.Background(), squatter); err != nil {
		t.Fatal(err)
	}
	r3 := e.runComponent(other, time.Minute)
	if r3.exitCode == 0 || r3.output != nil {
		t.Fatalf("component adopted a job of another run: exit %d, output %v", r3.exitCode, r3.output)
	}
	if _, ok := r3.firstLine("refusing to adopt", squatter.Name); !ok {
		t.Errorf("no refusal naming %s", squatter.Name)
	}
}

// TestLaunchRestartAdoptsRunningJob: a step stopped while its job trains (its pod deleted, say)
// leaves the job running; the restarted step adopts it, follows it to the end and outputs the model.
func TestLaunchRestartAdoptsRunningJob(t *testing.T) {
	requireTrainer(t)
	e := newEnv(t, "restart")
	runID := uuid.NewString()
	// About three seconds of training (750 rounds of depth 2 at about 4 ms a round): the step is
	// stopped and its job listed within them even on a busy machine (60 rounds left well under a
	// second).
	s := e.newStep(runID, "train-iris", map[string]any{"model_name": "iris", "workers": 1, "num_round": 750, "max_depth": "2", "nthread": 1})
	wantJob := launch.JobName(launch.Identity{RunID: runID, TaskName: "train-iris"})

	r := e.runComponentUntil(s, 2*time.Minute, "job Running")
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("stopped component: exit %d, output %v; want a failure without outputs", r.exitCode, r.output)
	}
	if _, ok := r.firstLine("keeps running and a retry of the step adopts it"); !ok {
		t.Error("the stopped component did not say the job keeps running")
	}
	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].DeletionTimestamp != nil {
		t.Fatalf("after the stop: %d jobs, want the one running job", len(jobs))
	}
	uid := jobs[0].UID
	for _, c := range jobs[0].Status.Conditions {
		if c.Type == "Succeeded" && c.Status == corev1.ConditionTrue {
			t.Fatal("the job finished before the step restarted: nothing running to adopt (raise num_round)")
		}
	}

	r2 := e.runComponent(s, 4*time.Minute)
	if r2.exitCode != 0 {
		t.Fatalf("restarted component exited %d, want 0", r2.exitCode)
	}
	for _, want := range [][]string{{"adopted job", wantJob}, {"gang placed"}, {"job Succeeded"}} {
		if _, ok := r2.firstLine(want...); !ok {
			t.Errorf("restarted step: no progress line with %q", want)
		}
	}
	checkOutputs(t, e, r2, wantJob, 2)
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0].UID != uid {
		t.Errorf("after the restart: %d jobs, want the one adopted", len(jobs))
	}
}

// checkOutputs asserts the ExecutorOutput: the Model artifact at pvc://<claim>/models/iris/v1 with
// the metadata of a real model folder trained by wantWorld ranks, the final metrics, model_uri
// and job_name.
func checkOutputs(t *testing.T, e *testEnv, r *run, wantJob string, wantWorld int) {
	t.Helper()
	if r.output == nil {
		t.Fatal("no ExecutorOutput written")
	}
	wantURI := "pvc://" + claimName + "/models/iris/v1"
	dir := filepath.Join(e.pvcDir, "models", "iris", "v1")
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		t.Fatalf("model folder on the claim: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, md.ModelFile)); err != nil {
		t.Errorf("model file: %v", err)
	}
	if _, err := cluster.CheckModelFolder(dir); err != nil {
		t.Errorf("trained model folder: %v", err)
	}
	model := r.output.GetArtifacts()[launch.OutputModel].GetArtifacts()
	if len(model) != 1 || model[0].GetUri() != wantURI {
		t.Fatalf("model artifact = %v, want uri %s", model, wantURI)
	}
	meta := model[0].GetMetadata().GetFields()
	if meta["model_sha256"].GetStringValue() != md.ModelSHA256 || meta["objective"].GetStringValue() != "multi:softprob" ||
		int(meta["world_size"].GetNumberValue()) != wantWorld || len(meta["classes"].GetListValue().GetValues()) != 3 {
		t.Errorf("model artifact metadata = %v, want the folder's (sha256 %s, %d ranks, 3 classes)", meta, md.ModelSHA256, wantWorld)
	}
	metrics := r.output.GetArtifacts()[launch.OutputMetrics].GetArtifacts()
	if len(metrics) != 1 {
		t.Fatalf("metrics artifact = %v", metrics)
	}
	mm := metrics[0].GetMetadata().GetFields()
	evalLoss, ok := mm["eval-mlogloss"]
	if !ok || evalLoss.GetNumberValue() <= 0 || evalLoss.GetNumberValue() != md.Metrics["eval-mlogloss"][len(md.Metrics["eval-mlogloss"])-1] {
		t.Errorf("metrics = %v, want the final eval-mlogloss of metadata.json", mm)
	}
	if got := r.output.GetParameterValues()[launch.OutputModelURI].GetStringValue(); got != wantURI {
		t.Errorf("model_uri = %q, want %q", got, wantURI)
	}
	if got := r.output.GetParameterValues()[launch.OutputJobName].GetStringValue(); got != wantJob {
		t.Errorf("job_name = %q, want %q", got, wantJob)
	}
	t.Logf("outputs: model %s (sha256 %.12s, %d rounds), eval-mlogloss %.4f", wantURI, md.ModelSHA256, md.Rounds, evalLoss.GetNumberValue())
}

// TestLaunchUnschedulable: a gang that cannot fit (one replica asking for 2 GPUs, nodes with one
// each) is explained while it waits, after the scheduler decided, and at its deadline the job is
// deleted and the component fails with the reason.
func TestLaunchUnschedulable(t *testing.T) {
	e := newEnv(t, "nofit")
	runID := uuid.NewString()
	const timeout = 20 * time.Second
	s := e.newStep(runID, "train", map[string]any{"model_name": "big", "workers": 0, "gpus": 2, "image": cudaTrainerImage, "schedule_timeout_seconds": int(timeout.Seconds())})
	job := launch.JobName(launch.Identity{RunID: runID, TaskName: "train"})

	// The scheduler's decision as the test sees it: the first Unschedulable condition on the
	// PodGroup that names the missing resource.
	decided := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			var pg schedulingv1beta1.PodGroup
			if e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: job}, &pg) == nil {
				for _, c := range pg.Status.Conditions {
					if c.Type == schedulingv1beta1.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "Insufficient") {
						decided <- time.Now()
						return
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	r := e.runComponent(s, 2*time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	waiting, ok := r.firstLine("gang waiting:")
	if !ok {
		t.Fatal("the component never said why the gang waits")
	}
	if !strings.Contains(waiting.text, "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu") {
		t.Errorf("first wait reason %q does not name the missing resource", waiting.text)
	}
	select {
	case at := <-decided:
		// How soon the explanation follows the decision depends on the machine; that it comes
		// while the gang waits, not only in the failure at the deadline, does not.
		t.Logf("scheduler decided (seen by the test) at +%.2fs, component explained at +%.2fs (lag %s)",
			at.Sub(r.started).Seconds(), waiting.at.Sub(r.started).Seconds(), waiting.at.Sub(at).Round(time.Millisecond))
		if last := r.lines[len(r.lines)-1]; waiting == last || !waiting.at.Before(last.at) {
			t.Errorf("the wait was explained only when the step failed at its deadline, not while the gang waited")
		}
	default:
		t.Error("the test never saw the PodGroup Unschedulable")
	}
	last := r.lines[len(r.lines)-1].text
	if !strings.Contains(last, "gang not scheduled within 20s") || !strings.Contains(last, "deleted") || !strings.Contains(last, "Insufficient nvidia.com/gpu") {
		t.Errorf("last line %q, want the deadline, the reason and the deletion", last)
	}
	// The deadline ends the wait: never before it (the last line says it was the deadline; how
	// long after it the step is done depends on the machine, and runComponent guards a hang).
	if d := r.ended.Sub(r.started); d < timeout {
		t.Errorf("component failed after %s, before its %s deadline", d, timeout)
	}
	var xj = e.jobs()
	for _, j := range xj {
		if j.Name == job && j.DeletionTimestamp == nil {
			t.Errorf("XGBoostJob %s still there after the deadline", job)
		}
	}
	cluster.WaitFor(e.t, 90*time.Second, "PodGroup gone", func(ctx context.Context) (bool, error) {
		var pg schedulingv1beta1.PodGroup
		err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: job}, &pg)
		return apierrors.IsNotFound(err), nil
	})
}

// TestLaunchTrainerFails: a trainer that fails in its pod (its training data is not on the claim,
// which only the pod can see) fails the job, and the component fails with the failing pod's
// reason, exit code and log tail. (Flags the trainer would reject never reach a pod: launch checks
// them against the trainer's flag definitions before it creates the job.)
func TestLaunchTrainerFails(t *testing.T) {
	requireTrainer(t)
	e := newEnv(t, "fail")
	s := e.newStep(uuid.NewString(), "train", map[string]any{"model_name": "bad", "workers": 1, "dataset": "", "train_data": "datasets/missing/train.csv"})
	r := e.runComponent(s, 3*time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	all := r.text()
	// Every rank reads the missing file: whichever fails first fails the job and is named.
	if !strings.Contains(all, "failed") || !strings.Contains(all, "exited 1 (Error)") ||
		(!strings.Contains(all, "-master-0") && !strings.Contains(all, "-worker-0")) {
		t.Errorf("failure does not name the failing pod's reason and exit code")
	}
	// The log tail comes through pods/log (the API server proxies it to the node's log endpoint).
	if !strings.Contains(all, "log tail:") || !strings.Contains(all, "open data: open ") || !strings.Contains(all, "datasets/missing/train.csv: no such file or directory") {
		t.Errorf("failure does not show the failing pod's log tail")
	}
}

// TestLaunchGPUsTheTrainerCannotUse: GPUs asked with an image whose build launch cannot know (not
// its own): the gang is placed on the GPU nodes, and every rank's gangboost-train, told by --gpus
// that its pod holds a GPU, refuses at start because its libxgboost has no CUDA; the step fails
// with that message instead of a job that trains on the CPU beside idle GPUs.
func TestLaunchGPUsTheTrainerCannotUse(t *testing.T) {
	requireTrainer(t)
	e := newEnv(t, "gpus")
	s := e.newStep(uuid.NewString(), "train", map[string]any{"model_name": "iris", "workers": 1, "gpus": 1, "image": cudaTrainerImage})
	r := e.runComponent(s, 3*time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	all := r.text()
	for _, want := range []string{"pods bound 2/2", "exited 2 (Error)",
		"--gpus 1 (the pod holds 1 GPU(s)): this gangboost-train links libxgboost 3.0.0 built without CUDA"} {
		if !strings.Contains(all, want) {
			t.Errorf("the step's output lacks %q", want)
		}
	}
}

// TestLaunchGangLargerThanCluster: three replicas of one GPU each on two one-GPU nodes. Volcano's
// enqueue keeps such a PodGroup Pending (its minResources exceed what the queue can get), so no pod
// is ever created; the reason comes from the PodGroup's events and conditions, and the deadline
// still deletes the job.
func TestLaunchGangLargerThanCluster(t *testing.T) {
	e := newEnv(t, "toolarge")
	e.waitQueueGPUsFree()
	runID := uuid.NewString()
	const timeout = 15 * time.Second
	s := e.newStep(runID, "train", map[string]any{"model_name": "big", "workers": 2, "gpus": 1, "image": cudaTrainerImage, "schedule_timeout_seconds": int(timeout.Seconds())})
	job := launch.JobName(launch.Identity{RunID: runID, TaskName: "train"})
	r := e.runComponent(s, 2*time.Minute)
	// The queue caps 8 GPUs, the two nodes have one each, none is in use.
	checkGangOfThreeGPUsNotPlaced(t, r, timeout, "nvidia.com/gpu 2 free (capability 8, cluster 2, allocated 0)")
	for _, j := range e.jobs() {
		if j.Name == job && j.DeletionTimestamp == nil {
			t.Errorf("XGBoostJob %s still there after the deadline", job)
		}
	}
}

// checkGangOfThreeGPUsNotPlaced asserts what a step whose gang of three one-GPU replicas never
// fits the two one-GPU nodes reports: a failure without outputs, a wait reason naming the gang's 3
// GPUs and the queue's room (queueRoom), and at its deadline a last line saying the gang was not
// scheduled and its job deleted.
func checkGangOfThreeGPUsNotPlaced(t *testing.T, r *run, timeout time.Duration, queueRoom string) {
	t.Helper()
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	waiting, ok := r.firstLine("gang waiting:")
	if !ok {
		t.Fatal("the component never said why the gang waits")
	}
	t.Logf("reason given at +%.2fs: %s", waiting.at.Sub(r.started).Seconds(), waiting.text)
	if !strings.Contains(waiting.text, "nvidia.com/gpu 3") {
		t.Errorf("wait reason %q does not say the gang needs 3 GPUs", waiting.text)
	}
	if !strings.Contains(waiting.text, "queue ml-training has") || !strings.Contains(waiting.text, queueRoom) {
		t.Errorf("wait reason %q does not say how many GPUs the queue can get", waiting.text)
	}
	last := r.lines[len(r.lines)-1].text
	if !strings.Contains(last, fmt.Sprintf("gang not scheduled within %s", timeout)) || !strings.Contains(last, "deleted") {
		t.Errorf("last line %q, want the deadline and the deletion", last)
	}
	// The deadline ends the wait: never before it (the last line says it was the deadline; how
	// long after it the step is done depends on the machine, and runComponent guards a hang).
	if d := r.ended.Sub(r.started); d < timeout {
		t.Errorf("component failed after %s, before its %s deadline", d, timeout)
	}
}
