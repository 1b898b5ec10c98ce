package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/test/cluster"
)

const (
	mlQueue          = "ml-training"
	trainingPriority = "gangboost-training"
	pvcMountPath     = "/mnt/pvc"
	claimName        = "gangboost-data"
	jobNameLabel     = "training.kubeflow.org/job-name"
)

// testEnv is one test's namespace on the shared control plane.
type testEnv struct {
	t  *testing.T
	c  *cluster.Cluster
	ns string
	// pvcDir is the local folder behind the namespace's claim.
	pvcDir string
	rec    *podRecorder
	// after runs once the namespace's pods are gone (e.g. removing nodes
	// the pods ran on).
	after []func()
}

// newEnv creates a namespace with a bound PersistentVolumeClaim backed by a
// local folder, and records pod bindings in it. Cleanup deletes the jobs
// and waits for their pods to be gone, so the next test finds the GPUs free.
func newEnv(t *testing.T, prefix string) *testEnv {
	t.Helper()
	c := cluster.Require(t)
	ctx := context.Background()
	e := &testEnv{t: t, c: c, ns: prefix + "-" + rand.String(5)}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", e.ns, err)
	}
	e.rec = recordPods(t, c, e.ns)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pod bindings in %s:\n%s", e.ns, e.rec.String())
			t.Logf("component logs:\n%s", c.LogTails(30))
		}
		e.cleanup()
	})
	e.pvcDir = e.c.LocalPVC(e.t, e.ns, claimName)
	return e
}

func (e *testEnv) cleanup() {
	start := time.Now()
	defer func() { e.t.Logf("cleanup of %s took %s", e.ns, time.Since(start).Round(time.Millisecond)) }()
	ctx := context.Background()
	c := e.c
	var jobs kubeflowv1.XGBoostJobList
	if err := c.Client.List(ctx, &jobs, client.InNamespace(e.ns)); err == nil {
		for i := range jobs.Items {
			_ = c.Client.Delete(ctx, &jobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
	}
	_ = c.Kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		e.t.Errorf("cleanup: pods of namespace %s still there after 60s", e.ns)
	}
	for _, f := range e.after {
		f()
	}
	_ = c.Kube.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
	_ = c.Kube.CoreV1().PersistentVolumes().Delete(ctx, e.ns+"-"+claimName, metav1.DeleteOptions{})
}

// jobSpec describes an XGBoostJob of the tests.
type jobSpec struct {
	name         string
	workers      int32
	gpus         int64 // per pod
	minAvailable *int32
	queue        string
	// command of every replica; rank 0 writes the model.
	command []string
}

// trainCommand is the trainer's command line as a pipeline launches it.
func trainCommand(modelDir string) []string {
	return []string{"gangboost-train", "--dataset", "iris", "--label", "species",
		"--objective", "multi:softprob", "--num-round", "20", "--model-dir", modelDir}
}

// xgboostJob builds the typed XGBoostJob: Master + workers, each pod with
// the claim at /mnt/pvc and its own free port (pods share the host network
// in tests; see package podrunner).
func (e *testEnv) xgboostJob(s jobSpec) *kubeflowv1.XGBoostJob {
	e.t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		e.t.Fatal(err)
	}
	template := func() corev1.PodTemplateSpec {
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1"),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
		if s.gpus > 0 {
			res[cluster.GPUResource] = *resource.NewQuantity(s.gpus, resource.DecimalSI)
		}
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			PriorityClassName: trainingPriority,
			Containers: []corev1.Container{{
				Name:    kubeflowv1.XGBoostJobDefaultContainerName,
				Image:   "ghcr.io/gangboost/gangboost-train:test",
				Command: s.command,
				Ports:   []corev1.ContainerPort{{Name: kubeflowv1.XGBoostJobDefaultPortName, ContainerPort: int32(port)}},
				Resources: corev1.ResourceRequirements{
					Requests: res,
					Limits:   res,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: pvcMountPath}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
			}}},
		}}
	}
	one := int32(1)
	never := kubeflowv1.RestartPolicyNever
	specs := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		kubeflowv1.XGBoostJobReplicaTypeMaster: {Replicas: &one, RestartPolicy: never, Template: template()},
	}
	if s.workers > 0 {
		w := s.workers
		specs[kubeflowv1.XGBoostJobReplicaTypeWorker] = &kubeflowv1.ReplicaSpec{Replicas: &w, RestartPolicy: never, Template: template()}
	}
	queue := s.queue
	if queue == "" {
		queue = mlQueue
	}
	return &kubeflowv1.XGBoostJob{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: e.ns},
		Spec: kubeflowv1.XGBoostJobSpec{
			RunPolicy: kubeflowv1.RunPolicy{
				SchedulingPolicy: &kubeflowv1.SchedulingPolicy{
					MinAvailable:  s.minAvailable,
					Queue:         queue,
					PriorityClass: trainingPriority,
				},
			},
			XGBReplicaSpecs: specs,
		},
	}
}

func (e *testEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Client.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// podGroup waits for the PodGroup the operator creates for a job (same
// name) and returns it.
func (e *testEnv) podGroup(job string) *schedulingv1beta1.PodGroup {
	e.t.Helper()
	var pg schedulingv1beta1.PodGroup
	cluster.WaitFor(e.t, 60*time.Second, "PodGroup "+job, func(ctx context.Context) (bool, error) {
		err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: job}, &pg)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return &pg
}

func (e *testEnv) getPodGroup(ctx context.Context, name string) (*schedulingv1beta1.PodGroup, error) {
	var pg schedulingv1beta1.PodGroup
	err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pg)
	return &pg, err
}

// jobPods lists a job's pods.
func (e *testEnv) jobPods(ctx context.Context, job string) ([]corev1.Pod, error) {
	pods, err := e.c.Kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + job})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// waitJobCondition waits for a job condition (Succeeded, Failed, Running)
// and fails at once when the job fails instead.
func (e *testEnv) waitJobCondition(job string, want kubeflowv1.JobConditionType, timeout time.Duration) *kubeflowv1.XGBoostJob {
	e.t.Helper()
	var xj kubeflowv1.XGBoostJob
	cluster.WaitFor(e.t, timeout, fmt.Sprintf("XGBoostJob %s %s", job, want), func(ctx context.Context) (bool, error) {
		if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: job}, &xj); err != nil {
			return false, err
		}
		for _, c := range xj.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			if c.Type == want {
				return true, nil
			}
			if c.Type == kubeflowv1.JobFailed {
				e.t.Fatalf("XGBoostJob %s failed: %s: %s\n%s", job, c.Reason, c.Message, e.c.Runner.LogTails(30))
			}
		}
		return false, nil
	})
	return &xj
}

// podRecord is what the recorder saw of one pod.
type podRecord struct {
	name, job, node string
	seen            time.Time // first seen (created)
	bound           time.Time // first seen with spec.nodeName
	finished        time.Time // first seen Succeeded or Failed (or deleted)
	// boundRV and finishedRV are the resourceVersions of the writes seen
	// at bound and finished: the test control plane's API server keeps its
	// objects in etcd, whose resourceVersion is the etcd revision, a total
	// order of all writes. Comparing them orders two pods' transitions
	// exactly, however late the test's watch delivers them.
	boundRV, finishedRV uint64
}

// podRecorder watches a namespace and keeps, per pod, when it was bound
// and when it ended: the evidence for all-or-nothing assertions.
type podRecorder struct {
	mu   sync.Mutex
	pods map[string]*podRecord
}

func recordPods(t *testing.T, c *cluster.Cluster, ns string) *podRecorder {
	r := &podRecorder{pods: map[string]*podRecord{}}
	f := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	observe := func(obj any, deleted bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				p, _ = d.Obj.(*corev1.Pod)
			}
		}
		if p == nil {
			return
		}
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		rec := r.pods[p.Name]
		if rec == nil {
			rec = &podRecord{name: p.Name, job: p.Labels[jobNameLabel], seen: now}
			r.pods[p.Name] = rec
		}
		rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if p.Spec.NodeName != "" && rec.bound.IsZero() {
			rec.bound, rec.node, rec.boundRV = now, p.Spec.NodeName, rv
		}
		terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if (terminal || deleted) && rec.finished.IsZero() {
			rec.finished, rec.finishedRV = now, rv
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop) })
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("pod recorder: cache not synced")
	}
	return r
}

// snapshot copies the records of a job's pods (all pods when job is "").
func (r *podRecorder) snapshot(job string) []podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []podRecord
	for _, p := range r.pods {
		if job == "" || p.job == job {
			out = append(out, *p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// pod returns the record of one pod; ok is false if the recorder has not
// seen it.
func (r *podRecorder) pod(name string) (rec podRecord, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pods[name]; p != nil {
		return *p, true
	}
	return podRecord{}, false
}

func (r *podRecorder) String() string {
	var b strings.Builder
	for _, p := range r.snapshot("") {
		fmt.Fprintf(&b, "  %-32s job=%-16s node=%-12s created=%s bound=%s (rv %d) finished=%s (rv %d)\n", p.name, p.job, p.node, stamp(p.seen), stamp(p.bound), p.boundRV, stamp(p.finished), p.finishedRV)
	}
	return b.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}

// boundSpan returns the earliest and latest bind time of a job's pods and
// how many are bound.
func boundSpan(recs []podRecord) (first, last time.Time, n int) {
	for _, p := range recs {
		if p.bound.IsZero() {
			continue
		}
		n++
		if first.IsZero() || p.bound.Before(first) {
			first = p.bound
		}
		if p.bound.After(last) {
			last = p.bound
		}
	}
	return first, last, n
}

// podGroupCondition returns the PodGroup's condition of a type, if any.
func podGroupCondition(pg *schedulingv1beta1.PodGroup, typ schedulingv1beta1.PodGroupConditionType) *schedulingv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == typ {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// phaseChange is one PodGroup phase the watch saw, with the resourceVersion
// of the write (see podRecord for why resourceVersions order writes).
type phaseChange struct {
	phase schedulingv1beta1.PodGroupPhase
	rv    uint64
}

// phaseRecorder keeps the phases a namespace's PodGroups went through. It
// watches rather than polls: every write is a watch event, so a phase that
// lasts less than a poll interval (a short job passes Running on its way to
// Completed) is still seen.
type phaseRecorder struct {
	mu     sync.Mutex
	phases map[string][]phaseChange
	// ended is set when the watch closed before the test stopped it.
	ended bool
}

func recordPodGroupPhases(t *testing.T, c *cluster.Cluster, ns string) *phaseRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// resourceVersion "0": start from the API server's watch cache as it
	// is. Unset, the server first waits for that cache to reach etcd's
	// current revision, which a cache of rarely written PodGroups does not
	// within its 3 s ("Too large resource version") when etcd sends it no
	// progress notifications. The namespace is new, so nothing is missed.
	w, err := wc.Watch(ctx, &schedulingv1beta1.PodGroupList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		cancel()
		t.Fatalf("watch PodGroups in %s: %v", ns, err)
	}
	r := &phaseRecorder{phases: map[string][]phaseChange{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pg, ok := ev.Object.(*schedulingv1beta1.PodGroup)
			if !ok {
				continue
			}
			rv, _ := strconv.ParseUint(pg.ResourceVersion, 10, 64)
			r.mu.Lock()
			seen := r.phases[pg.Name]
			if len(seen) == 0 || seen[len(seen)-1].phase != pg.Status.Phase {
				r.phases[pg.Name] = append(seen, phaseChange{phase: pg.Status.Phase, rv: rv})
			}
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.ended = ctx.Err() == nil
		r.mu.Unlock()
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return r
}

// of returns the phases one PodGroup went through, in order, and whether
// the watch ended early (then later phases may be missing).
func (r *phaseRecorder) of(name string) (phases []phaseChange, ended bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.phases[name]), r.ended
}

func (r *phaseRecorder) String(name string) string {
	phases, ended := r.of(name)
	parts := make([]string, 0, len(phases))
	for _, p := range phases {
		parts = append(parts, fmt.Sprintf("%s (rv %d)", orDash(string(p.phase)), p.rv))
	}
	s := strings.Join(parts, " -> ")
	if ended {
		s += " (watch ended early)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
