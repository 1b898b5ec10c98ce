package kube

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/kube/kubewatch"
	"github.com/gangboost/gangboost/internal/steps/launch"
)

// Backend runs jobs as XGBoostJobs or TrainJobs (the job's API) on a cluster.
type Backend struct {
	api    jobAPI
	config *rest.Config
	scheme *runtime.Scheme
	client client.Client
	// core reads pod logs (the typed core client alone: the full clientset would link every
	// API group's client).
	core corev1client.CoreV1Interface
	// LogTailLines of a failing pod's log are printed (when the log can be read).
	LogTailLines int64
}

var _ launch.Backend = (*Backend)(nil)

// Scheme knows the types the backend reads and writes.
func Scheme() (*runtime.Scheme, error) {
	return kubecfg.Scheme(kubeflowv1.AddToScheme, trainer.AddToScheme, schedulingv1beta1.AddToScheme)
}

// New returns a backend talking to the cluster of cfg that runs jobs as the job API names
// (launch.APIXGBoostJob or launch.APITrainJob).
func New(cfg *rest.Config, jobAPI string) (*Backend, error) {
	api, err := apiFor(jobAPI)
	if err != nil {
		return nil, err
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := kubecfg.Client(cfg, s)
	if err != nil {
		return nil, err
	}
	k, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Backend{api: api, config: cfg, scheme: s, client: c, core: k, LogTailLines: 20}, nil
}

// Start creates the job's XGBoostJob or TrainJob, or adopts the one an earlier attempt of the same step (same
// run and task annotations) created. A job of that name created by anything else is refused.
func (b *Backend) Start(ctx context.Context, j *launch.Job) (launch.Started, error) {
	kind := b.api.kind()
	obj, err := b.api.build(j)
	if err != nil {
		return launch.Started{}, fmt.Errorf("build %s %s: %w", kind, j.Name, err)
	}
	if err := b.checkClaim(ctx, j); err != nil {
		return launch.Started{}, err
	}
	if err := b.checkTrainJobAPI(ctx, obj); err != nil {
		return launch.Started{}, err
	}
	// creationTimestamp has whole seconds: a new job's deadline counts from the local clock.
	before := time.Now()
	err = b.client.Create(ctx, obj)
	if err == nil {
		return launch.Started{Created: before}, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return launch.Started{}, fmt.Errorf("create %s %s/%s: %w", kind, j.Namespace, j.Name, err)
	}
	cur := b.api.object(j.Namespace, j.Name)
	if err := b.client.Get(ctx, client.ObjectKeyFromObject(cur), cur); err != nil {
		return launch.Started{}, fmt.Errorf("%s %s/%s exists but cannot be read to adopt it: %w", kind, j.Namespace, j.Name, err)
	}
	run, task := cur.GetAnnotations()[RunIDAnnotation], cur.GetAnnotations()[TaskNameAnnotation]
	if run != j.Identity.RunID || task != j.Identity.TaskName {
		return launch.Started{}, fmt.Errorf("%s %s/%s exists but was not created by %s (its %s is %q, %s %q): refusing to adopt it; delete it or rename the task",
			kind, j.Namespace, j.Name, j.Identity, RunIDAnnotation, run, TaskNameAnnotation, task)
	}
	if cur.GetDeletionTimestamp() != nil {
		return launch.Started{}, fmt.Errorf("%s %s/%s of %s is being deleted: retry the step once it is gone", kind, j.Namespace, j.Name, j.Identity)
	}
	return launch.Started{Adopted: true, Created: cur.GetCreationTimestamp().Time}, nil
}

// checkTrainJobAPI refuses a TrainJob the cluster's Trainer would run without its runtime patch:
// Trainer before v2.2 (Kubeflow 1.11 ships v2.1.0) has no spec.runtimePatches, and its API server
// prunes the field as unknown without an error, so the claim, the pods' security context and the
// Volcano queue would silently not reach the pods. A server-side dry run of the create (nothing
// is stored; the same permission as the create) shows what the API server would keep.
func (b *Backend) checkTrainJobAPI(ctx context.Context, obj client.Object) error {
	tj, ok := obj.(*trainer.TrainJob)
	if !ok || len(tj.Spec.RuntimePatches) == 0 {
		return nil
	}
	probe := tj.DeepCopy()
	err := b.client.Create(ctx, probe, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		return nil // an earlier attempt's: adopted below
	}
	if err != nil {
		return fmt.Errorf("create TrainJob %s/%s (dry run): %w", tj.Namespace, tj.Name, err)
	}
	if len(probe.Spec.RuntimePatches) == 0 {
		return fmt.Errorf("the cluster's Kubeflow Trainer dropped the TrainJob's spec.runtimePatches (its TrainJob API predates v2.2; Kubeflow 1.11 ships Trainer v2.1.0): "+
			"the claim, the pods' security context and the Volcano queue would not reach the pods, so no TrainJob was created; "+
			"use job_api %s (the Training Operator's XGBoostJob), or upgrade Kubeflow Trainer to v2.2 or later", launch.APIXGBoostJob)
	}
	return nil
}

// checkClaim refuses a gang of several pods on a claim they cannot all mount: Volcano places the
// pods on different nodes, and a ReadWriteOnce volume attaches to one node only, so the other
// pods would stay ContainerCreating (Multi-Attach error) until the job's deadline. A bound claim's
// access modes are its volume's (status); an unbound one's are what it asks for (spec).
func (b *Backend) checkClaim(ctx context.Context, j *launch.Job) error {
	if j.Replicas() < 2 {
		return nil
	}
	var pvc corev1.PersistentVolumeClaim
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Claim}, &pvc); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("claim %s not found in namespace %s: create it (manifests/pvc.yaml, ReadWriteMany) or set pvc_name", j.Claim, j.Namespace)
		case apierrors.IsForbidden(err):
			return fmt.Errorf("read claim %s/%s to check its access modes: %w (grant persistentvolumeclaims get to the step's service account: under KFP, manifests/kubeflow's ClusterRole gangboost-edit, aggregated into a profile's kubeflow-edit or bound to standalone KFP's pipeline-runner; run as its own account, the Role in manifests/rbac/launch-xgboostjob.yaml)", j.Namespace, j.Claim, err)
		}
		return fmt.Errorf("read claim %s/%s to check its access modes: %w", j.Namespace, j.Claim, err)
	}
	return claimAccess(&pvc, j.Replicas())
}

// claimAccess says why pods of a gang of n cannot all mount pvc, nil when they can
// (ReadWriteMany).
func claimAccess(pvc *corev1.PersistentVolumeClaim, n int32) error {
	modes := pvc.Spec.AccessModes
	if pvc.Status.Phase == corev1.ClaimBound && len(pvc.Status.AccessModes) > 0 {
		modes = pvc.Status.AccessModes
	}
	names := make([]string, len(modes))
	for i, m := range modes {
		if m == corev1.ReadWriteMany {
			return nil
		}
		names[i] = string(m)
	}
	have := strings.Join(names, ", ")
	if have == "" {
		have = "without access modes"
	}
	return fmt.Errorf("claim %s is %s: the gang's %d pods on different nodes cannot all mount it for writing; use a ReadWriteMany storage class (NFS, CephFS, EFS, Filestore) for the claim, see manifests/pvc.yaml",
		pvc.Name, have, n)
}

// Delete deletes the job; the garbage collector removes its pods and PodGroup.
func (b *Backend) Delete(ctx context.Context, j *launch.Job) error {
	err := b.client.Delete(ctx, b.api.object(j.Namespace, j.Name), client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", b.api.kind(), j.Namespace, j.Name, err)
	}
	return nil
}

// Watch follows the job through informers on the job, its PodGroup (the operator and Trainer's
// Volcano plugin name it after the job), its pods and the events about the job and the PodGroup, until the job succeeds or fails.
func (b *Backend) Watch(ctx context.Context, j *launch.Job, progress func(launch.Progress)) error {
	byName := fields.OneTermEqualSelector("metadata.name", j.Name)
	var w *watcher
	stepCtx := ctx
	err := kubewatch.Follow(ctx, b.config, b.scheme, kubewatch.Informers{
		Namespace: j.Namespace,
		ByObject: map[client.Object]cache.ByObject{
			b.api.object("", ""):          {Field: byName},
			&schedulingv1beta1.PodGroup{}: {Field: byName},
			&corev1.Pod{}:                 {Label: labels.SelectorFromSet(labels.Set{b.api.podLabel(): j.Name})},
			&corev1.Event{}:               {Field: fields.OneTermEqualSelector("involvedObject.name", j.Name)},
		},
		What:  fmt.Sprintf("%s %s/%s", b.api.kind(), j.Namespace, j.Name),
		Needs: b.api.resources(),
	}, func(ctx context.Context, r client.Reader) (bool, error) {
		if w == nil {
			w = &watcher{b: b, j: j, r: r, progress: progress, failures: map[string]string{}, restarts: map[string]int32{},
				stepCtx: stepCtx, ended: make(chan struct{})}
		}
		return w.observe(ctx)
	})
	if w != nil {
		// A restarted gang that finished before its Master's log was next read still says
		// where it resumed: each follower reads the log once more before the step goes on.
		close(w.ended)
		w.follows.Wait()
	}
	return err
}

// watcher turns what the informers hold into progress lines, once per change.
type watcher struct {
	b        *Backend
	j        *launch.Job
	r        client.Reader
	progress func(launch.Progress)

	seenJob              bool
	lastPhase, lastBound string
	lastWaiting          string
	conditions           []string // job conditions printed, in order
	started              bool
	// failures of pods seen failing, by pod name, kept in case the pods are cleaned up.
	failures map[string]string
	// queueUnreadable is set once the queue or the nodes could not be read (the service
	// account lacks the ClusterRole): wait reasons go on without the queue's room.
	queueUnreadable bool
	// restarts are the trainer containers' restart counts seen, by pod name; followStart reads
	// them from its own goroutine. mu guards them and serialises progress reports.
	mu       sync.Mutex
	restarts map[string]int32
	// follows counts the followStart goroutines running; ended is closed once the watch is over.
	// They run under stepCtx, Watch's own context: the informers' context ends with the watch,
	// before their last read.
	follows sync.WaitGroup
	stepCtx context.Context
	ended   chan struct{}
}

// queueRoom says how much of what the gang needs its queue can still get, read when a wait
// reason changes: Volcano admits a gang only when its minResources fit the queue's capability
// (capped by what the cluster's nodes have) less what the queue's running pods hold. Both are
// cluster-scoped reads (the ClusterRole in manifests/rbac/launch-xgboostjob.yaml); without
// them the reason says so once and then goes without.
func (w *watcher) queueRoom(ctx context.Context, pg *schedulingv1beta1.PodGroup) string {
	if w.queueUnreadable || pg.Spec.Queue == "" || pg.Spec.MinResources == nil {
		return ""
	}
	var q schedulingv1beta1.Queue
	err := w.b.client.Get(ctx, client.ObjectKey{Name: pg.Spec.Queue}, &q)
	var nodes corev1.NodeList
	if err == nil {
		err = w.b.client.List(ctx, &nodes)
	}
	if err != nil {
		w.queueUnreadable = true
		return fmt.Sprintf("queue %s's room unknown: %v", pg.Spec.Queue, err)
	}
	allocatable := corev1.ResourceList{}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		for name, v := range n.Status.Allocatable {
			sum := allocatable[name]
			sum.Add(v)
			allocatable[name] = sum
		}
	}
	return queueRoom(&q, *pg.Spec.MinResources, allocatable)
}

// queueRoom is, for each resource the gang needs: the queue's room (its capability, or the
// cluster's allocatable when that is less or the queue sets no cap, less the queue's allocated),
// e.g. "queue ml-training (Open) has nvidia.com/gpu 2 free (capability 8, cluster 2, allocated 0)".
func queueRoom(q *schedulingv1beta1.Queue, need, cluster corev1.ResourceList) string {
	names := make([]string, 0, len(need))
	for n := range need {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		name := corev1.ResourceName(n)
		limit, capped := q.Spec.Capability[name]
		total, known := cluster[name]
		if !known {
			total = resource.Quantity{}
		}
		room := total.DeepCopy()
		if capped && limit.Cmp(total) < 0 {
			room = limit.DeepCopy()
		}
		allocated := q.Status.Allocated[name]
		room.Sub(allocated)
		if room.Sign() < 0 {
			room = resource.Quantity{}
		}
		capText := "none"
		if capped {
			capText = limit.String()
		}
		parts = append(parts, fmt.Sprintf("%s %s free (capability %s, cluster %s, allocated %s)", n, room.String(), capText, total.String(), allocated.String()))
	}
	state := ""
	if q.Status.State != "" && q.Status.State != schedulingv1beta1.QueueStateOpen {
		state = " (" + string(q.Status.State) + ")"
	}
	return fmt.Sprintf("queue %s%s has %s", q.Name, state, strings.Join(parts, ", "))
}

func (w *watcher) emit(p launch.Progress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress(p)
}

// observe reads the cache; done is set when the job has ended (err nil: succeeded).
func (w *watcher) observe(ctx context.Context) (done bool, err error) {
	ns, name := w.j.Namespace, w.j.Name
	api := w.b.api
	obj := api.object(ns, name)
	switch err := w.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		if w.seenJob {
			return true, fmt.Errorf("%s %s/%s was deleted while the step waited for it", api.kind(), ns, name)
		}
		return false, nil
	case err != nil:
		return false, nil
	}
	w.seenJob = true
	st := api.state(obj)

	var pg schedulingv1beta1.PodGroup
	havePG := w.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pg) == nil
	var pods corev1.PodList
	_ = w.r.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{api.podLabel(): name})
	var events corev1.EventList
	_ = w.r.List(ctx, &events, client.InNamespace(ns))

	if havePG && string(pg.Status.Phase) != w.lastPhase {
		w.lastPhase = string(pg.Status.Phase)
		w.emit(launch.Progress{Line: fmt.Sprintf("PodGroup %s: phase %s (minMember %d, queue %s)", name, orNone(w.lastPhase), pg.Spec.MinMember, pg.Spec.Queue)})
	}
	bound := 0
	var podWhy []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" {
			bound++
		} else if msg := unschedulable(p); msg != "" {
			podWhy = appendUnique(podWhy, msg)
		}
		if p.Status.Phase == corev1.PodFailed || failedContainer(p) != "" {
			if _, ok := w.failures[p.Name]; !ok {
				w.failures[p.Name] = w.describeFailure(ctx, p)
			}
		}
	}
	w.noteRestarts(pods.Items)
	total := int(w.j.Replicas())
	if b := fmt.Sprintf("pods bound %d/%d", bound, total); b != w.lastBound {
		w.lastBound = b
		w.emit(launch.Progress{Line: b})
	}
	for _, c := range st.conditions {
		line := "job " + c
		if !contains(w.conditions, line) {
			w.conditions = append(w.conditions, line)
			w.emit(launch.Progress{Line: line})
		}
	}

	minMember := int(w.j.MinAvailable())
	if havePG && pg.Spec.MinMember > 0 {
		minMember = int(pg.Spec.MinMember)
	}
	if !w.started && ((bound >= minMember && bound > 0) || st.running || st.succeeded) {
		w.started = true
		w.lastWaiting = ""
		w.emit(launch.Progress{Line: fmt.Sprintf("gang placed: %d/%d pods bound", bound, total), GangStarted: true})
	}
	if !w.started {
		why := waitReason(&pg, havePG, events.Items, len(pods.Items), podWhy)
		if why != "" && why != w.lastWaiting {
			w.lastWaiting = why
			if havePG {
				if q := w.queueRoom(ctx, &pg); q != "" {
					why += "; " + q
				}
			}
			w.emit(launch.Progress{Line: "gang waiting: " + why, Waiting: why})
		}
	}

	switch {
	case st.succeeded:
		return true, nil
	case st.failed != "":
		fe := &launch.FailedError{Job: ns + "/" + name, Reason: st.failed}
		names := make([]string, 0, len(w.failures))
		for n := range w.failures {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fe.Pods = append(fe.Pods, w.failures[n])
		}
		return true, fe
	}
	return false, nil
}

// noteRestarts reports each restart of a trainer container (restartPolicy OnFailure: the kubelet
// restarts it in place), and for a restart of the Master follows its new run's log until the
// trainer says where the gang starts: "resumed from checkpoint at round K" or from round 0.
func (w *watcher) noteRestarts(pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != kubeflowv1.XGBoostJobDefaultContainerName || cs.RestartCount <= w.restartCount(p.Name) {
				continue
			}
			w.mu.Lock()
			w.restarts[p.Name] = cs.RestartCount
			w.mu.Unlock()
			line := fmt.Sprintf("pod %s: trainer restarted (restart %d)", p.Name, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				line += fmt.Sprintf(" after exit code %d (%s)", t.ExitCode, orNone(t.Reason))
			}
			w.emit(launch.Progress{Line: line})
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == strings.ToLower(string(kubeflowv1.XGBoostJobReplicaTypeMaster)) {
				w.follows.Add(1)
				go w.followStart(w.stepCtx, p.Namespace, p.Name, cs.RestartCount)
			}
		}
	}
}

// resumeLine is the trainer's log line saying where a gang starts.
var resumeLine = regexp.MustCompile(`msg="(resumed from checkpoint at round \d+|starting from round 0)"`)

// followStart reads the Master's log (its current run) every few seconds until the trainer says
// where the gang starts, and reports it; it gives up when the container restarts again or after
// the gang's start timeout, and reads once more when the watch ends (the job may have finished
// before the next read). The log is read only while a restart is being followed: pods/log has
// no cheap way to wait for one line.
func (w *watcher) followStart(ctx context.Context, ns, pod string, restart int32) {
	defer w.follows.Done()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-w.ended:
			if ctx.Err() == nil { // not when the step is stopping
				last, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				w.reportStart(last, ns, pod, restart)
			}
			return
		case <-time.After(followStartEvery):
		}
		if w.restartCount(pod) != restart {
			return
		}
		if w.reportStart(ctx, ns, pod, restart) {
			return
		}
	}
}

// startLogBytes bounds what reportStart reads of a run's log: its start, where the trainer says
// where the gang starts, whatever the run logged after.
const startLogBytes = 64 << 10

// reportStart reports where the Master's current run started the gang, if its log says so yet.
func (w *watcher) reportStart(ctx context.Context, ns, pod string, restart int32) bool {
	limit := int64(startLogBytes)
	b, err := w.b.core.Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: kubeflowv1.XGBoostJobDefaultContainerName, LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return false
	}
	m := resumeLine.FindSubmatch(b)
	if m == nil {
		return false
	}
	w.emit(launch.Progress{Line: fmt.Sprintf("pod %s (restart %d): %s", pod, restart, m[1])})
	return true
}

// followStartEvery is how often followStart reads the Master's log.
var followStartEvery = 2 * time.Second

// restartCount is the restart count last seen for a pod's trainer container.
func (w *watcher) restartCount(pod string) int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarts[pod]
}

// waitReason says why a gang waits. While Volcano's enqueue has not admitted the PodGroup
// (Pending) the gang waits for room in its queue, which enqueue judges for the gang as a whole: the
// PodGroup's newest Unschedulable event (e.g. "queue resource quota insufficient"), else its
// condition, with what the whole gang asks for. Once admitted, the newest Unschedulable condition
// (Volcano's gang plugin, e.g. "1/1 tasks in gang unschedulable: ... 0/2 nodes are unavailable: 2
// Insufficient nvidia.com/gpu."), else the newest event. Then the pods' scheduling messages it
// does not already hold. A condition or event written before the pods existed counts none ("2/0
// tasks in gang unschedulable: pod group is not ready") and says nothing of the resources: it is
// skipped, and while the PodGroup is admitted (Inqueue) but has no pods yet there is no reason to
// give. (A TrainJob's JobSet creates its pods before enqueue admits the PodGroup; the Training
// Operator creates an XGBoostJob's after.)
func waitReason(pg *schedulingv1beta1.PodGroup, havePG bool, events []corev1.Event, pods int, podWhy []string) string {
	if havePG && pg.Status.Phase == schedulingv1beta1.PodGroupInqueue && pods == 0 {
		return ""
	}
	var condition, event string
	if havePG {
		// Volcano may keep several Unschedulable conditions; the newest is the current one.
		var newest *schedulingv1beta1.PodGroupCondition
		for i := range pg.Status.Conditions {
			c := &pg.Status.Conditions[i]
			if c.Type == schedulingv1beta1.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue && c.Message != "" && !noTasks.MatchString(c.Message) &&
				(newest == nil || !c.LastTransitionTime.Before(&newest.LastTransitionTime)) {
				newest = c
			}
		}
		if newest != nil {
			condition = strings.TrimSuffix(newest.Message, ".")
		}
	}
	var newest *corev1.Event
	for i := range events {
		ev := &events[i]
		if ev.InvolvedObject.Kind != "PodGroup" || ev.Reason != string(schedulingv1beta1.PodGroupUnschedulableType) || noTasks.MatchString(ev.Message) {
			continue
		}
		if newest == nil || kubewatch.EventTime(ev).After(kubewatch.EventTime(newest)) {
			newest = ev
		}
	}
	if newest != nil {
		event = strings.TrimSuffix(newest.Message, ".")
	}
	pending := havePG && (pg.Status.Phase == schedulingv1beta1.PodGroupPending || pg.Status.Phase == "")
	gang := condition
	if gang == "" || (pending && event != "") {
		gang = event
	}
	var parts []string
	if gang != "" {
		if pending && pg.Spec.MinResources != nil {
			gang += " (the gang of " + fmt.Sprint(pg.Spec.MinMember) + " needs " + formatResources(*pg.Spec.MinResources) + " in queue " + pg.Spec.Queue + ")"
		}
		parts = append(parts, gang)
	}
	for _, why := range podWhy {
		if !strings.Contains(strings.Join(parts, "; "), why) {
			parts = append(parts, why)
		}
	}
	return strings.Join(parts, "; ")
}

// formatResources lists resources by name: "cpu 3, memory 3Gi, nvidia.com/gpu 3".
func formatResources(rl corev1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for i, n := range names {
		q := rl[corev1.ResourceName(n)]
		names[i] = n + " " + q.String()
	}
	return strings.Join(names, ", ")
}

// noTasks matches Volcano's gang message about a PodGroup without pods.
var noTasks = regexp.MustCompile(`^\d+/0 tasks in gang unschedulable`)

// unschedulable is the scheduler's message on a pending pod (condition PodScheduled False).
func unschedulable(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return strings.TrimSuffix(c.Message, ".")
		}
	}
	return ""
}

// failedContainer describes a container that ended with a non-zero exit code.
func failedContainer(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		t := s.State.Terminated
		if t == nil {
			t = s.LastTerminationState.Terminated
		}
		if t != nil && t.ExitCode != 0 {
			msg := fmt.Sprintf("container %s exited %d (%s)", s.Name, t.ExitCode, orNone(t.Reason))
			if t.Message != "" {
				msg += ": " + strings.TrimSpace(t.Message)
			}
			return msg
		}
	}
	return ""
}

// describeFailure is a failing pod's reason, exit code and message, and its log tail if the log
// can be read.
func (w *watcher) describeFailure(ctx context.Context, p *corev1.Pod) string {
	var parts []string
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	if c := failedContainer(p); c != "" {
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		parts = append(parts, "phase "+string(p.Status.Phase))
	}
	msg := fmt.Sprintf("pod %s on %s: %s", p.Name, orNone(p.Spec.NodeName), strings.Join(parts, "; "))
	logCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tail := w.b.LogTailLines
	b, err := w.b.core.Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: w.b.api.container(), TailLines: &tail}).DoRaw(logCtx)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		msg += "\nlog tail:\n" + strings.TrimRight(string(b), "\n")
	}
	return msg
}

func appendUnique(list []string, items ...string) []string {
	for _, s := range items {
		if s != "" && !contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
