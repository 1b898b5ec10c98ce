// Package podrunner is a test kubelet: it runs the containers of pods bound
// to fake (KWOK) nodes as local processes and reports their status to the
// API server, so jobs scheduled by the real scheduler really run.
//
// What a pod gets:
//   - its container command and args, with the command mapped to a local
//     executable (Options.Commands, e.g. gangboost-train -> bin/gangboost-train;
//     other commands from PATH only if Options.AllowHostCommands);
//   - the environment the kubelet would build (values, Downward API,
//     ConfigMap/Secret keys, $(VAR) expansion), with host names of the pod
//     network (Services and pods of its namespace, e.g. MASTER_ADDR=
//     job-master-0) in literal values mapped to 127.0.0.1 (the pod's IP,
//     status.podIP, is 127.0.0.1 too);
//   - volumes as local folders: a PersistentVolumeClaim is the hostPath (or
//     local path) of its bound PersistentVolume, else Options.PVCDir; paths
//     under a mount path are rewritten to them where a whole argument, env
//     value or workingDir (or the part after "=" of --flag=value) is such a
//     path; paths inside scripts (sh -c '... /mnt/pvc/x') are not.
//
// Networking: every pod shares the host network, like hostNetwork pods, so
// a containerPort is a port on 127.0.0.1. Replicas of one job declare the
// same port (the training operator's MASTER_PORT) though only rank 0
// listens on it, so a port belongs to the pod's controller (its owner, e.g.
// the XGBoostJob): pods of another owner declaring a port in use fail with
// reason PortConflict instead of reaching a stranger's server, and so does
// a pod whose port is already bound on 127.0.0.1 by someone else. Tests
// give each job its own port (XGBoostJob: the container port named
// xgboostjob-port).
//
// KWOK must leave these pods alone (the cluster package configures it to
// manage only nodes).
package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// Options configure a Runner.
type Options struct {
	// Commands maps a container command (full or base name) to a local
	// executable.
	Commands map[string]string
	// Images maps an image to its entrypoint for containers without a
	// command.
	Images map[string][]string
	// AllowHostCommands lets commands not in Commands run from PATH.
	AllowHostCommands bool
	// PVCDir is the folder of a claim that is not bound to a hostPath or
	// local PersistentVolume; default <os.TempDir()>/gangboost-pvc/<ns>/<claim>.
	PVCDir func(namespace, claim string) string
	// PassEnv names variables of the test process passed to pods (e.g.
	// LD_LIBRARY_PATH); others are not.
	PassEnv []string
	// LogDir receives <namespace>_<pod>_<container>.log; default a temp dir.
	LogDir string
	// WorkDir holds per-pod folders (emptyDir volumes, HOME, TMPDIR);
	// default a temp dir.
	WorkDir string
	// Log receives one line per pod start and end; default io.Discard.
	Log io.Writer
	// NodeSelector picks the nodes whose pods this runner runs.
	NodeSelector func(*corev1.Node) bool
	// GracePeriod caps the time between SIGTERM and SIGKILL when a pod is
	// deleted; default 5s.
	GracePeriod time.Duration
}

// Runner runs pods bound to the selected nodes.
type Runner struct {
	kube    kubernetes.Interface
	opts    Options
	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer
	queue   chan string
	started chan struct{}

	mu      sync.Mutex
	running map[types.UID]*podProc
	done    map[types.UID]bool
	ports   map[int]*portHold // containerPort -> owner holding it
}

// portHold is a port claimed by the running pods of one owner.
type portHold struct {
	owner string
	pods  map[types.UID]bool
}

// portOwner is the pod's controller, else the pod itself.
func portOwner(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind + "/" + pod.Namespace + "/" + ref.Name
	}
	return "Pod/" + pod.Namespace + "/" + pod.Name
}

// podProc is a pod being run.
type podProc struct {
	key    string
	uid    types.UID
	cancel context.CancelFunc
	exited chan struct{}
	ports  []int
	mu     sync.Mutex
	cmds   []*exec.Cmd
}

// New creates a Runner; Run starts it.
func New(kube kubernetes.Interface, o Options) (*Runner, error) {
	if o.NodeSelector == nil {
		return nil, errors.New("podrunner: Options.NodeSelector is required")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = 5 * time.Second
	}
	var err error
	if o.WorkDir == "" {
		if o.WorkDir, err = os.MkdirTemp("", "gangboost-pods-"); err != nil {
			return nil, err
		}
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(o.WorkDir, "logs")
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	if o.PVCDir == nil {
		root := filepath.Join(os.TempDir(), "gangboost-pvc")
		o.PVCDir = func(ns, claim string) string { return filepath.Join(root, ns, claim) }
	}
	f := informers.NewSharedInformerFactory(kube, 0)
	r := &Runner{
		kube:    kube,
		opts:    o,
		factory: f,
		pods:    f.Core().V1().Pods().Informer(),
		nodes:   f.Core().V1().Nodes().Informer(),
		queue:   make(chan string, 1024),
		started: make(chan struct{}),
		running: map[types.UID]*podProc{},
		done:    map[types.UID]bool{},
		ports:   map[int]*portHold{},
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue <- key
		}
	}
	_, err = r.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return nil, err
	}
	// A node turning selected (created after its pods were bound) makes
	// its pods runnable.
	_, err = r.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			n := obj.(*corev1.Node)
			for _, o := range r.pods.GetStore().List() {
				if p := o.(*corev1.Pod); p.Spec.NodeName == n.Name {
					enqueue(p)
				}
			}
		},
	})
	return r, err
}

// Run watches pods until ctx ends, then kills every process it started.
func (r *Runner) Run(ctx context.Context) error {
	r.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), r.pods.HasSynced, r.nodes.HasSynced) {
		return ctx.Err()
	}
	close(r.started)
	for {
		select {
		case <-ctx.Done():
			r.killAll()
			return ctx.Err()
		case key := <-r.queue:
			if err := r.sync(ctx, key); err != nil {
				fmt.Fprintf(r.opts.Log, "podrunner: %s: %v\n", key, err)
			}
		}
	}
}

// WaitStarted waits until the runner's caches are synced.
func (r *Runner) WaitStarted(ctx context.Context, timeout time.Duration) error {
	select {
	case <-r.started:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("podrunner: caches not synced after %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runner) selectedNode(name string) bool {
	if name == "" {
		return false
	}
	obj, ok, _ := r.nodes.GetStore().GetByKey(name)
	return ok && r.opts.NodeSelector(obj.(*corev1.Node))
}

func (r *Runner) sync(ctx context.Context, key string) error {
	obj, exists, err := r.pods.GetStore().GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		r.stopByKey(key)
		return nil
	}
	pod := obj.(*corev1.Pod)
	r.mu.Lock()
	proc := r.running[pod.UID]
	finished := r.done[pod.UID]
	r.mu.Unlock()
	// A pod already running stays ours even if its node went away.
	if proc == nil && !r.selectedNode(pod.Spec.NodeName) {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if proc != nil {
			go r.terminate(ctx, pod, proc)
			return nil
		}
		// Never started or already ended: nothing to stop, finish the
		// deletion the way a kubelet does.
		return r.finalizeDelete(ctx, pod)
	}
	if proc != nil || finished || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	return r.start(ctx, pod)
}

// start claims the pod's ports, prepares it and runs it in the background.
func (r *Runner) start(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	var ports []int
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				ports = append(ports, int(p.ContainerPort))
			}
		}
	}
	owner := portOwner(pod)
	r.mu.Lock()
	for _, port := range ports {
		h, held := r.ports[port]
		if held && h.owner != owner {
			r.done[pod.UID] = true
			r.mu.Unlock()
			return r.fail(ctx, pod, "PortConflict", fmt.Sprintf("containerPort %d is held by %s; pods share the host network in tests, give each job its own port", port, h.owner))
		}
		if !held {
			if err := portFree(port); err != nil {
				r.done[pod.UID] = true
				r.mu.Unlock()
				return r.fail(ctx, pod, "PortConflict", fmt.Sprintf("containerPort %d is in use on 127.0.0.1: %v", port, err))
			}
		}
	}
	pctx, cancel := context.WithCancel(ctx)
	proc := &podProc{key: key, uid: pod.UID, cancel: cancel, exited: make(chan struct{}), ports: ports}
	for _, port := range ports {
		h := r.ports[port]
		if h == nil {
			h = &portHold{owner: owner, pods: map[types.UID]bool{}}
			r.ports[port] = h
		}
		h.pods[pod.UID] = true
	}
	r.running[pod.UID] = proc
	r.mu.Unlock()
	go r.run(pctx, pod.DeepCopy(), proc)
	return nil
}

func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	return l.Close()
}

// run executes init containers in order, then the containers together,
// and reports the pod's phase.
func (r *Runner) run(ctx context.Context, pod *corev1.Pod, proc *podProc) {
	defer func() {
		r.mu.Lock()
		delete(r.running, proc.uid)
		r.done[proc.uid] = true
		for _, port := range proc.ports {
			if h := r.ports[port]; h != nil {
				delete(h.pods, proc.uid)
				if len(h.pods) == 0 {
					delete(r.ports, port)
				}
			}
		}
		r.mu.Unlock()
		close(proc.exited)
	}()
	prep := &preparer{kube: r.kube, opts: &r.opts, pod: pod, podDir: filepath.Join(r.opts.WorkDir, pod.Namespace, pod.Name+"-"+string(pod.UID)[:8])}
	if err := prep.prepare(ctx); err != nil {
		_ = r.fail(ctx, pod, "RunContainerError", err.Error())
		return
	}
	var launches []*launch
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		l, err := prep.container(ctx, c)
		if err != nil {
			_ = r.fail(ctx, pod, "RunContainerError", err.Error())
			return
		}
		launches = append(launches, l)
	}
	inits, mains := launches[:len(pod.Spec.InitContainers)], launches[len(pod.Spec.InitContainers):]
	for _, l := range inits {
		code, err := r.exec(ctx, pod, proc, l)
		if err != nil || code != 0 {
			_ = r.report(ctx, pod, corev1.PodFailed, nil, fmt.Sprintf("init container %s exited with %d: %v", l.name, code, err))
			return
		}
	}
	start := time.Now()
	fmt.Fprintf(r.opts.Log, "podrunner: %s on %s: starting %d container(s)\n", proc.key, pod.Spec.NodeName, len(mains))
	if err := r.report(ctx, pod, corev1.PodRunning, runningStatuses(pod, start), ""); err != nil {
		fmt.Fprintf(r.opts.Log, "podrunner: %s: report Running: %v\n", proc.key, err)
	}
	type result struct {
		i    int
		code int
		err  error
		end  time.Time
	}
	results := make(chan result, len(mains))
	for i, l := range mains {
		go func(i int, l *launch) {
			code, err := r.execWithRestarts(ctx, pod, proc, l)
			results <- result{i, code, err, time.Now()}
		}(i, l)
	}
	statuses := runningStatuses(pod, start)
	failed := false
	for range mains {
		res := <-results
		if res.err != nil {
			fmt.Fprintf(r.opts.Log, "podrunner: %s container %s: %v\n", proc.key, mains[res.i].name, res.err)
			if res.code == 0 {
				res.code = 128
			}
		}
		if res.code != 0 {
			failed = true
		}
		statuses[res.i] = terminatedStatus(pod.Spec.Containers[res.i], start, res.end, res.code)
		if ctx.Err() != nil {
			continue
		}
		phase := corev1.PodRunning
		if allTerminated(statuses) {
			phase = corev1.PodSucceeded
			if failed {
				phase = corev1.PodFailed
			}
		}
		if err := r.report(ctx, pod, phase, statuses, ""); err != nil {
			fmt.Fprintf(r.opts.Log, "podrunner: %s: report %s: %v\n", proc.key, phase, err)
		}
	}
	if ctx.Err() == nil {
		fmt.Fprintf(r.opts.Log, "podrunner: %s: finished after %s (failed=%v)\n", proc.key, time.Since(start).Round(time.Millisecond), failed)
	}
}

// execWithRestarts runs a container, restarting it as restartPolicy says
// (OnFailure, Always) with the kubelet's doubling back-off, capped at 10s.
func (r *Runner) execWithRestarts(ctx context.Context, pod *corev1.Pod, proc *podProc, l *launch) (int, error) {
	backoff := time.Second
	for {
		code, err := r.exec(ctx, pod, proc, l)
		if ctx.Err() != nil {
			return code, err
		}
		switch pod.Spec.RestartPolicy {
		case corev1.RestartPolicyAlways:
		case corev1.RestartPolicyOnFailure:
			if code == 0 && err == nil {
				return code, err
			}
		default:
			return code, err
		}
		select {
		case <-ctx.Done():
			return code, err
		case <-time.After(backoff):
		}
		if backoff < 10*time.Second {
			backoff *= 2
		}
	}
}

// exec runs one container to its end and returns its exit code.
func (r *Runner) exec(ctx context.Context, pod *corev1.Pod, proc *podProc, l *launch) (int, error) {
	logPath := filepath.Join(r.opts.LogDir, fmt.Sprintf("%s_%s_%s.log", pod.Namespace, pod.Name, l.name))
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fmt.Fprintf(f, "$ %s\n", strings.Join(l.argv, " "))
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Env = l.env
	cmd.Dir = l.dir
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: deletion kills what the container forked too;
	// Pdeathsig: nothing outlives the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	proc.mu.Lock()
	if ctx.Err() != nil {
		proc.mu.Unlock()
		return 137, ctx.Err()
	}
	if err := cmd.Start(); err != nil {
		proc.mu.Unlock()
		fmt.Fprintf(f, "start: %v\n", err)
		return 128, err
	}
	proc.cmds = append(proc.cmds, cmd)
	proc.mu.Unlock()
	err = cmd.Wait()
	fmt.Fprintf(f, "exit: %v\n", err)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// signal sends sig to the process groups of the pod's containers.
func (proc *podProc) signal(sig syscall.Signal) {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	for _, c := range proc.cmds {
		if c.Process != nil && c.ProcessState == nil {
			_ = syscall.Kill(-c.Process.Pid, sig)
		}
	}
}

// stop ends the pod's processes: SIGTERM, then SIGKILL after grace.
func (proc *podProc) stop(grace time.Duration) {
	proc.cancel()
	proc.signal(syscall.SIGTERM)
	select {
	case <-proc.exited:
	case <-time.After(grace):
		proc.signal(syscall.SIGKILL)
		<-proc.exited
	}
}

// terminate handles a deletion: stop the processes within the pod's grace
// period (capped by Options.GracePeriod), then remove the pod.
func (r *Runner) terminate(ctx context.Context, pod *corev1.Pod, proc *podProc) {
	grace := r.opts.GracePeriod
	if g := pod.DeletionGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
		grace = time.Duration(*g) * time.Second
	}
	proc.stop(grace)
	if err := r.finalizeDelete(ctx, pod); err != nil {
		fmt.Fprintf(r.opts.Log, "podrunner: %s: %v\n", proc.key, err)
	}
}

// finalizeDelete removes a terminating pod with grace period 0, which is
// the kubelet's last step of a deletion.
func (r *Runner) finalizeDelete(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	uid := pod.UID
	err := r.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

func (r *Runner) stopByKey(key string) {
	r.mu.Lock()
	var procs []*podProc
	for _, p := range r.running {
		if p.key == key {
			procs = append(procs, p)
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		go p.stop(r.opts.GracePeriod)
	}
}

func (r *Runner) killAll() {
	r.mu.Lock()
	procs := make([]*podProc, 0, len(r.running))
	for _, p := range r.running {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func(p *podProc) { defer wg.Done(); p.stop(2 * time.Second) }(p)
	}
	wg.Wait()
}

// fail reports a pod Failed before any container ran.
func (r *Runner) fail(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	fmt.Fprintf(r.opts.Log, "podrunner: %s/%s failed: %s: %s\n", pod.Namespace, pod.Name, reason, msg)
	now := metav1.Now()
	var statuses []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 128, Reason: reason, Message: msg, StartedAt: now, FinishedAt: now,
			}},
		})
	}
	return r.updateStatus(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		st.Reason = reason
		st.Message = msg
		st.ContainerStatuses = statuses
		setReady(st, false)
	})
}

// report writes the pod's phase and container statuses.
func (r *Runner) report(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, statuses []corev1.ContainerStatus, msg string) error {
	return r.updateStatus(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = phase
		if msg != "" {
			st.Message = msg
		}
		if statuses != nil {
			st.ContainerStatuses = statuses
		}
		setReady(st, phase == corev1.PodRunning && allRunning(statuses))
	})
}

func (r *Runner) updateStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.PodStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		st := &cur.Status
		if st.StartTime == nil {
			now := metav1.Now()
			st.StartTime = &now
		}
		st.HostIP, st.PodIP = loopback, loopback
		st.HostIPs = []corev1.HostIP{{IP: loopback}}
		st.PodIPs = []corev1.PodIP{{IP: loopback}}
		mutate(st)
		_, err = r.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func setReady(st *corev1.PodStatus, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.Now()
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		s := status
		if t == corev1.PodInitialized {
			s = corev1.ConditionTrue
		}
		found := false
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				found = true
				if st.Conditions[i].Status != s {
					st.Conditions[i].Status = s
					st.Conditions[i].LastTransitionTime = now
				}
			}
		}
		if !found {
			st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
		}
	}
}

func runningStatuses(pod *corev1.Pod, start time.Time) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	started := true
	for _, c := range pod.Spec.Containers {
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "podrunner://" + string(pod.UID) + "/" + c.Name,
			Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}},
		})
	}
	return out
}

func terminatedStatus(c corev1.Container, start, end time.Time, code int) corev1.ContainerStatus {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	started := false
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: c.Image, Started: &started,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(end),
		}},
	}
}

func allTerminated(st []corev1.ContainerStatus) bool {
	for _, s := range st {
		if s.State.Terminated == nil {
			return false
		}
	}
	return true
}

func allRunning(st []corev1.ContainerStatus) bool {
	for _, s := range st {
		if s.State.Running == nil {
			return false
		}
	}
	return len(st) > 0
}

// PodLog returns what a pod's container wrote.
func (r *Runner) PodLog(namespace, pod, container string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.opts.LogDir, fmt.Sprintf("%s_%s_%s.log", namespace, pod, container)))
	return string(b), err
}

// LogTails returns the last n lines of every pod log, for failure output.
func (r *Runner) LogTails(n int) string {
	entries, _ := os.ReadDir(r.opts.LogDir)
	var b strings.Builder
	for _, e := range entries {
		b.WriteString("===== pod " + e.Name() + " =====\n")
		data, _ := os.ReadFile(filepath.Join(r.opts.LogDir, e.Name()))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return b.String()
}
