package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestControlPlane reports the start figures and checks the training
// operator runs with the command line operator-config renders.
func TestControlPlane(t *testing.T) {
	c := cluster.Require(t)
	t.Logf("tools: %s (built now: %d); control plane start: %s",
		c.Timings.Tools.Round(time.Millisecond), len(c.Timings.ToolsBuilt), c.Timings.ControlPlane.Round(time.Millisecond))
	for _, b := range c.Timings.ToolsBuilt {
		t.Logf("  built %s in %s", b.Tool, b.Duration.Round(time.Second))
	}
	for _, p := range c.Timings.Phases {
		t.Logf("  %-24s %s", p.Name, p.Duration.Round(time.Millisecond))
	}
	if !slices.Contains(c.OperatorArgs, "--gang-scheduler-name=volcano") {
		t.Errorf("training operator args from operator-config = %q, want --gang-scheduler-name=volcano", c.OperatorArgs)
	}
	// The operator runs with its service account's token: what
	// operator-config grants is what it has.
	sa := "system:serviceaccount:kubeflow:training-operator"
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Group: "scheduling.volcano.sh", Resource: "podgroups", Verb: "create", Namespace: "default"},
		{Group: "scheduling.volcano.sh", Resource: "podgroups", Verb: "delete", Namespace: "default"},
		{Group: "scheduling.k8s.io", Resource: "priorityclasses", Verb: "list"},
		{Group: "kubeflow.org", Resource: "xgboostjobs", Verb: "watch"},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, ResourceAttributes: &ra}}
		res, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Status.Allowed {
			t.Errorf("%s may not %s %s.%s: %s", sa, ra.Verb, ra.Resource, ra.Group, res.Status.Reason)
		}
	}
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.32.2" {
		t.Errorf("server version = %v, %v; want v1.32.2 (version ldflags of the kube tools module)", v, err)
	}
}

// TestGangAllOrNothing is the classic gang demo: with one of two GPUs taken, a
// Master + Worker job needing one GPU each gets no pod placed; freeing the
// GPU places both together and the job trains a model onto the claim. It
// judges the outcome (every bind after the blocker's end, in the API
// server's write order; the job Succeeded; the model on the claim), never a
// PodGroup phase the scheduler may skip.
func TestGangAllOrNothing(t *testing.T) {
	e := newEnv(t, "gang")
	ctx := context.Background()
	trainer := requireTrainer(t)

	blocker := blockerPod(e.ns, "gpu-blocker", e.c.Nodes[0])
	e.create(blocker)
	cluster.WaitFor(e.t, 90*time.Second, "blocker Running", func(ctx context.Context) (bool, error) {
		p, err := e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, blocker.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})

	two := int32(2)
	job := e.xgboostJob(jobSpec{
		name: "iris-gang", workers: 1, gpus: 1, minAvailable: &two,
		command: trainCommand(pvcMountPath + "/models/iris/v1"),
	})
	phases := recordPodGroupPhases(t, e.c, e.ns)
	e.create(job)

	pg := e.podGroup(job.Name)
	if pg.Spec.MinMember != 2 {
		t.Errorf("PodGroup %s minMember = %d, want 2", pg.Name, pg.Spec.MinMember)
	}
	if pg.Spec.Queue != mlQueue {
		t.Errorf("PodGroup %s queue = %q, want %q", pg.Name, pg.Spec.Queue, mlQueue)
	}
	// The operator creates the pods once Volcano has admitted the PodGroup
	// (phase Inqueue); the allocate action then finds room for one of two.
	var pods []corev1.Pod
	cluster.WaitFor(e.t, 60*time.Second, "2 pods of the job", func(ctx context.Context) (bool, error) {
		var err error
		pods, err = e.jobPods(ctx, job.Name)
		return len(pods) == 2, err
	})
	// The gang says why it waits, about its pods: an Unschedulable condition or event whose
	// message counts them. What Volcano wrote before the pods existed says "2/0 tasks"; whether a
	// later session rewrites the condition or only records an event depends on its version (and
	// a condition's time has 1 s resolution), so either one is the explanation.
	var why string
	cluster.WaitFor(e.t, 90*time.Second, "PodGroup Unschedulable condition or event about the pods", func(ctx context.Context) (bool, error) {
		pg, err := e.getPodGroup(ctx, job.Name)
		if err != nil {
			return false, err
		}
		if c := podGroupCondition(pg, schedulingv1beta1.PodGroupUnschedulableType); c != nil && c.Status == corev1.ConditionTrue &&
			c.Reason != "" && aboutPods(c.Message) {
			why = "condition " + c.Reason + ": " + c.Message
			return true, nil
		}
		evs, err := e.podGroupEvents(ctx, job.Name)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Reason == string(schedulingv1beta1.PodGroupUnschedulableType) && aboutPods(ev.Message) {
				why = "event " + ev.Reason + ": " + ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("PodGroup %s waits: %s", job.Name, why)
	for _, p := range pods {
		if p.Spec.SchedulerName != "volcano" || p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] != job.Name {
			t.Errorf("pod %s: schedulerName %q, group annotation %q; want volcano, %s",
				p.Name, p.Spec.SchedulerName, p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey], job.Name)
		}
	}
	// Several scheduling cycles (1s each) with one GPU free: still no pod
	// may be placed. (On a slow machine fewer cycles run in the pause; a pod
	// bound in any of them still fails the order check below.)
	time.Sleep(3 * time.Second)
	if _, _, n := boundSpan(e.rec.snapshot(job.Name)); n != 0 {
		t.Fatalf("%d pod(s) of the gang bound while only one GPU was free:\n%s", n, e.rec.String())
	}

	deleted := time.Now()
	if err := e.c.Kube.CoreV1().Pods(e.ns).Delete(ctx, blocker.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A hang detector: freeing the GPU must place the gang at all.
	cluster.WaitFor(e.t, 60*time.Second, "both gang pods bound", func(context.Context) (bool, error) {
		_, _, n := boundSpan(e.rec.snapshot(job.Name))
		return n == 2, nil
	})
	// How far apart the binds land depends on the machine's load (they are
	// separate API writes), so it is logged, not asserted.
	first, last, _ := boundSpan(e.rec.snapshot(job.Name))
	t.Logf("blocker deletion -> all gang pods bound: %s (binds %s apart)", last.Sub(deleted).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond))

	// All or nothing, by the order of the API server's writes rather than
	// by the clock: Volcano binds a gang's pods only in a session that has
	// room for all of them, and that needs the blocker's GPU back, so each
	// gang pod's bind is a later write than the blocker's end. A pod placed
	// on the one free GPU while the blocker held the other (some but not all
	// of the gang bound) would carry an earlier resourceVersion.
	blk, ok := e.rec.pod(blocker.Name)
	if !ok || blk.finishedRV == 0 {
		t.Fatalf("the recorder never saw blocker %s end:\n%s", blocker.Name, e.rec.String())
	}
	for _, p := range e.rec.snapshot(job.Name) {
		if p.boundRV <= blk.finishedRV {
			t.Errorf("pod %s bound (rv %d) before the blocker released its GPU (rv %d): part of the gang was placed while the whole gang could not fit\n%s",
				p.name, p.boundRV, blk.finishedRV, e.rec.String())
		}
	}
	// The PodGroup's phases are logged, not judged: which of them a gang passes through is the
	// scheduler's bookkeeping, not the outcome. Volcano v1.15 writes the phase once a session and
	// may leave a gang that trained in half a second Inqueue after its pods have ended; the binds
	// above, the job's success and the model below are what gang scheduling promises.
	t.Logf("PodGroup %s phases: %s", job.Name, phases.String(job.Name))

	e.waitJobCondition(job.Name, kubeflowv1.JobSucceeded, 3*time.Minute)
	checkModel(t, filepath.Join(e.pvcDir, "models", "iris", "v1"))
	t.Logf("trainer %s: model written to %s", trainer, filepath.Join(e.pvcDir, "models", "iris", "v1"))
}

// TestTwoJobsNoDeadlock is the TFJob1/TFJob2 deadlock Volcano's documentation
// describes: two jobs each needing all free GPUs are submitted together; one runs to the
// end, then the other, never half of each.
//
// The cluster gets four GPUs, two of them held by pods of another
// scheduler: the queue and the cluster could hold both jobs, so Volcano's
// enqueue admits both and their four pods compete for two free GPUs in the
// allocate action, where only gang scheduling keeps them from taking one
// GPU each. (With two GPUs in total, enqueue already admits one job at a
// time.)
func TestTwoJobsNoDeadlock(t *testing.T) {
	e := newEnv(t, "deadlock")
	requireTrainer(t)
	ctx := context.Background()
	for i := 3; i <= 4; i++ {
		n := cluster.NodeSpec{Name: fmt.Sprintf("gpu-node-%d", i), CPU: "8", Memory: "32Gi", GPUs: 1}
		if err := e.c.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		e.after = append(e.after, func() {
			if err := e.c.RemoveNode(context.Background(), n.Name); err != nil {
				t.Error(err)
			}
		})
		e.create(blockerPod(e.ns, fmt.Sprintf("blocker-%d", i), n.Name))
	}
	t0 := time.Now()
	if err := e.c.WaitNodesSchedulable(ctx, 60*time.Second); err != nil {
		t.Fatalf("added nodes not schedulable: %v", err)
	}
	t.Logf("added nodes schedulable after %s", time.Since(t0).Round(time.Millisecond))
	// The two free GPUs are held by gates until both jobs' pods exist: the jobs compete by
	// construction, not by how fast the operator created the second one's pods.
	var gates []string
	for _, node := range e.c.Nodes[:2] {
		gate := blockerPod(e.ns, "gate-"+node, node)
		e.create(gate)
		gates = append(gates, gate.Name)
	}
	cluster.WaitFor(e.t, 90*time.Second, "gates Running", func(ctx context.Context) (bool, error) {
		for _, g := range gates {
			p, err := e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, g, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, err
			}
		}
		return true, nil
	})
	two := int32(2)
	names := []string{"job-a", "job-b"}
	for _, n := range names {
		e.create(e.xgboostJob(jobSpec{
			name: n, workers: 1, gpus: 1, minAvailable: &two,
			command: trainCommand(pvcMountPath + "/models/" + n + "/v1"),
		}))
	}
	cluster.WaitFor(e.t, 90*time.Second, "both jobs' pods created", func(context.Context) (bool, error) {
		return len(e.rec.snapshot(names[0])) == 2 && len(e.rec.snapshot(names[1])) == 2, nil
	})
	for _, g := range gates {
		if err := e.c.Kube.CoreV1().Pods(e.ns).Delete(ctx, g, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		e.waitJobCondition(n, kubeflowv1.JobSucceeded, 4*time.Minute)
	}
	a, b := e.rec.snapshot(names[0]), e.rec.snapshot(names[1])
	aFirst, _, an := boundSpan(a)
	bFirst, _, bn := boundSpan(b)
	if an != 2 || bn != 2 {
		t.Fatalf("bound pods: %s %d, %s %d; want 2 each:\n%s", names[0], an, names[1], bn, e.rec.String())
	}
	firstJob, second := a, b
	if bFirst.Before(aFirst) {
		firstJob, second = b, a
	}
	secondStart, _, _ := boundSpan(second)
	for _, p := range firstJob {
		if p.finished.IsZero() || p.finished.After(secondStart) {
			t.Errorf("pod %s (job %s) still running when job %s got its first pod bound: both jobs held GPUs\n%s",
				p.name, p.job, second[0].job, e.rec.String())
		}
	}
	// The contention was real: the second job's pods existed while the
	// first job ran.
	for _, p := range second {
		if !p.seen.Before(firstJob[0].bound) {
			t.Errorf("pod %s created at %s, after job %s was placed: the jobs never competed\n%s", p.name, stamp(p.seen), firstJob[0].job, e.rec.String())
		}
	}
	for _, p := range append(firstJob, second...) {
		if p.node == "gpu-node-3" || p.node == "gpu-node-4" {
			t.Errorf("pod %s bound to %s, whose GPU a blocker holds", p.name, p.node)
		}
	}
	t.Logf("order: %s then %s\n%s", firstJob[0].job, second[0].job, e.rec.String())
	for _, n := range names {
		checkModel(t, filepath.Join(e.pvcDir, "models", n, "v1"))
	}
}

// TestQueueCapability: a job whose minimum exceeds its queue's capability
// stays Pending (not admitted by enqueue) with the reason, though the
// cluster has room.
func TestQueueCapability(t *testing.T) {
	e := newEnv(t, "capability")
	ctx := context.Background()
	queue := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-one-gpu"},
		Spec: schedulingv1beta1.QueueSpec{
			Weight: 1,
			Capability: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("16"),
				corev1.ResourceMemory: resource.MustParse("64Gi"),
				cluster.GPUResource:   resource.MustParse("1"),
			},
		},
	}
	e.create(queue)
	t.Cleanup(func() { _ = e.c.Client.Delete(context.Background(), queue) })

	two := int32(2)
	job := e.xgboostJob(jobSpec{
		name: "too-big", workers: 1, gpus: 1, minAvailable: &two, queue: queue.Name,
		command: []string{"sleep", "30"},
	})
	e.create(job)
	pg := e.podGroup(job.Name)
	if pg.Spec.MinResources == nil {
		t.Fatalf("PodGroup %s has no minResources; the queue cannot judge it", pg.Name)
	}
	if got := pg.Spec.MinResources.Name(cluster.GPUResource, resource.DecimalSI); got.Value() != 2 {
		t.Errorf("PodGroup minResources %s = %s, want 2", cluster.GPUResource, got)
	}
	var reason string
	cluster.WaitFor(e.t, 60*time.Second, "event 'queue resource quota insufficient' on the PodGroup", func(ctx context.Context) (bool, error) {
		evs, err := e.podGroupEvents(ctx, job.Name)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if strings.Contains(ev.Message, "queue resource quota insufficient") {
				reason = ev.Reason + ": " + ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("PodGroup %s waits: %s", job.Name, reason)
	time.Sleep(2 * time.Second)
	cur, err := e.getPodGroup(ctx, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != schedulingv1beta1.PodGroupPending {
		t.Errorf("PodGroup phase = %q, want Pending (not admitted to queue %s)", cur.Status.Phase, queue.Name)
	}
	if _, _, n := boundSpan(e.rec.snapshot(job.Name)); n != 0 {
		t.Errorf("%d pod(s) bound beyond the queue's capability:\n%s", n, e.rec.String())
	}
}

// TestElasticMinAvailable: minAvailable 2 of 3 replicas starts with the
// two that fit (two GPUs) instead of waiting for the third.
func TestElasticMinAvailable(t *testing.T) {
	e := newEnv(t, "elastic")
	two := int32(2)
	job := e.xgboostJob(jobSpec{
		name: "elastic", workers: 2, gpus: 1, minAvailable: &two,
		command: []string{"sleep", "600"},
	})
	e.create(job)
	pg := e.podGroup(job.Name)
	if pg.Spec.MinMember != 2 {
		t.Errorf("PodGroup minMember = %d, want 2", pg.Spec.MinMember)
	}
	cluster.WaitFor(e.t, 60*time.Second, "two pods bound", func(context.Context) (bool, error) {
		_, _, n := boundSpan(e.rec.snapshot(job.Name))
		return n == 2, nil
	})
	cluster.WaitFor(e.t, 90*time.Second, "two pods Running", func(ctx context.Context) (bool, error) {
		pods, err := e.jobPods(ctx, job.Name)
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, err
	})
	time.Sleep(3 * time.Second)
	if _, _, n := boundSpan(e.rec.snapshot(job.Name)); n != 2 {
		t.Errorf("bound pods = %d, want 2 (only two GPUs)\n%s", n, e.rec.String())
	}
	cluster.WaitFor(e.t, 90*time.Second, "PodGroup Running", func(ctx context.Context) (bool, error) {
		pg, err := e.getPodGroup(ctx, job.Name)
		return err == nil && pg.Status.Phase == schedulingv1beta1.PodGroupRunning, err
	})
}

// blockerPod holds one GPU of a node; it is bound directly, as a pod of
// another scheduler would be, and sleeps until deleted.
func blockerPod(ns, name, node string) *corev1.Pod {
	gpu := corev1.ResourceList{cluster.GPUResource: resource.MustParse("1")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "blocker", Image: "busybox", Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu},
			}},
		},
	}
}

// requireTrainer returns the trainer binary or fails: the gang tests train
// real models.
func requireTrainer(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testbin.Dir(t), "gangboost-train")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("trainer %s not found (run `make build`, or set GANGBOOST_BIN_DIR): %v", p, err)
	}
	return p
}

// checkModel asserts the PVC layout of a trained model: model.json (an
// XGBoost JSON model) and metadata.json naming the model file's sha256, which
// the file has, and a model the runtime's evaluator loads
// (cluster.CheckModelFolder).
func checkModel(t *testing.T, dir string) {
	t.Helper()
	if _, err := cluster.CheckModelFolder(dir); err != nil {
		t.Errorf("trained model folder: %v", err)
	}
	model, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	var m struct {
		Learner map[string]any `json:"learner"`
	}
	if err := json.Unmarshal(model, &m); err != nil || m.Learner == nil {
		t.Errorf("%s/model.json: not an XGBoost JSON model (no learner): %v", dir, err)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var md map[string]any
	if err := json.Unmarshal(meta, &md); err != nil {
		t.Errorf("%s/metadata.json: %v", dir, err)
	}
	if len(md) == 0 {
		t.Errorf("%s/metadata.json is empty", dir)
	}
}

// noTasks matches Volcano's gang message about a PodGroup whose pods do not exist yet.
var noTasks = regexp.MustCompile(`^\d+/0 tasks in gang unschedulable`)

// aboutPods reports whether a gang message is about existing pods.
func aboutPods(msg string) bool { return msg != "" && !noTasks.MatchString(msg) }

// podGroupEvents are the events recorded about the PodGroup of the named job (the Training
// Operator names the PodGroup after its job).
func (e *testEnv) podGroupEvents(ctx context.Context, name string) ([]corev1.Event, error) {
	evs, err := e.c.Kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.SelectorFromSet(fields.Set{
		"involvedObject.kind": "PodGroup", "involvedObject.name": name,
	}).String()})
	if err != nil {
		return nil, err
	}
	return evs.Items, nil
}
