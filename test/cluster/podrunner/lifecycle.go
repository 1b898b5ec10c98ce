package podrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
)

// run executes init containers in order, then the containers together,
// and reports the pod's phase, its containers' states and readiness.
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
		code, msg, err := r.exec(ctx, pod, proc, l, nil)
		if err != nil || code != 0 {
			ps := newPodState(r, pod, time.Now())
			ps.msg = fmt.Sprintf("init container %s exited with %d: %v", l.name, code, err)
			if msg != "" {
				ps.msg += ": " + msg
			}
			ps.publish(ctx, corev1.PodFailed)
			return
		}
	}
	start := time.Now()
	fmt.Fprintf(r.opts.Log, "podrunner: %s on %s: starting %d container(s)\n", proc.key, pod.Spec.NodeName, len(mains))
	ps := newPodState(r, pod, start)
	proc.mu.Lock()
	proc.state = ps
	proc.mu.Unlock()
	ps.publish(ctx, corev1.PodRunning)
	type result struct {
		i    int
		code int
		err  error
	}
	results := make(chan result, len(mains))
	for i, l := range mains {
		go func(i int, l *launch) {
			pr := &prober{container: pod.Spec.Containers[i], exec: execProbe(l, prep.resolveCommand)}
			code, err := r.execWithRestarts(ctx, pod, proc, l, ps, i, pr)
			results <- result{i, code, err}
		}(i, l)
	}
	failed := false
	for range mains {
		res := <-results
		if res.err != nil {
			fmt.Fprintf(r.opts.Log, "podrunner: %s container %s: %v\n", proc.key, mains[res.i].name, res.err)
		}
		if res.code != 0 || res.err != nil {
			failed = true
		}
	}
	if ctx.Err() == nil {
		fmt.Fprintf(r.opts.Log, "podrunner: %s: finished after %s (failed=%v)\n", proc.key, time.Since(start).Round(time.Millisecond), failed)
	}
}

// execWithRestarts runs a container, restarting it as restartPolicy says
// (OnFailure, Always) with the kubelet's doubling back-off, capped at 10s.
// Each run of the process gets its own probes.
func (r *Runner) execWithRestarts(ctx context.Context, pod *corev1.Pod, proc *podProc, l *launch, ps *podState, i int, pr *prober) (int, error) {
	backoff := time.Second
	for restarts := 0; ; restarts++ {
		var started time.Time
		code, msg, err := r.exec(ctx, pod, proc, l, func(pctx context.Context, kill func()) {
			started = time.Now()
			c := pr.container
			ps.running(ctx, i, started, restarts, c.StartupProbe == nil && c.ReadinessProbe == nil)
			go r.probeContainer(pctx, ps, i, pr, kill)
		})
		if err != nil && code == 0 {
			code = 128
		}
		if ctx.Err() != nil {
			return code, err
		}
		restart := false
		switch pod.Spec.RestartPolicy {
		case corev1.RestartPolicyAlways:
			restart = true
		case corev1.RestartPolicyOnFailure:
			restart = code != 0
		}
		ps.exited(ctx, i, started, time.Now(), code, msg, restart)
		if !restart {
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

// exec runs one container to its end and returns its exit code and termination message. started,
// if set, is called once the process runs, with a context that ends with
// the process and a function that kills it (what a failed liveness probe
// does).
func (r *Runner) exec(ctx context.Context, pod *corev1.Pod, proc *podProc, l *launch, started func(context.Context, func())) (int, string, error) {
	logPath := filepath.Join(r.opts.LogDir, fmt.Sprintf("%s_%s_%s.log", pod.Namespace, pod.Name, l.name))
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "%s%s\n", CommandLinePrefix, strings.Join(l.argv, " "))
	runStart, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, "", err
	}
	argv := l.argv
	if r.opts.MountVolumes && len(l.mounts) > 0 {
		argv = withMounts(l.mounts, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = l.env
	cmd.Dir = l.dir
	cmd.Stdout, cmd.Stderr = f, f
	if r.opts.MountVolumes {
		// Go makes the new namespace's mounts private, so nothing reaches the host's.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	proc.mu.Lock()
	if ctx.Err() != nil {
		proc.mu.Unlock()
		return 137, "", ctx.Err()
	}
	// Own process group: deletion kills what the container forked too, and nothing outlives
	// the test binary.
	container, err := procgroup.Start(cmd)
	if err != nil {
		proc.mu.Unlock()
		fmt.Fprintf(f, "start: %v\n", err)
		return 128, err.Error(), err
	}
	proc.containers = append(proc.containers, container)
	proc.mu.Unlock()
	if started != nil {
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		grace := r.opts.GracePeriod
		started(pctx, func() { container.Stop(grace) })
	}
	err = container.Err()
	proc.mu.Lock()
	proc.containers = slices.DeleteFunc(proc.containers, func(c *procgroup.Process) bool { return c == container })
	proc.mu.Unlock()
	code := 0
	if c := procgroup.ExitCode(err); err != nil && c >= 0 {
		code, err = c, nil
	}
	msg := ""
	if l.fallbackToLogs && code != 0 {
		msg = logTail(logPath, runStart)
	}
	fmt.Fprintf(f, "exit: %d\n", code)
	return code, msg, err
}

// mountScript runs first in a container's own mount namespace: it binds each volume's folder at
// its mount path (creating a missing mountpoint), read-only where the volumeMount says so, then
// becomes the container's command. Its arguments: (source target rw|ro)... -- argv...
const mountScript = `while [ "$1" != -- ]; do
  if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")" && { [ -e "$2" ] || : >"$2"; }; fi || exit 126
  mount --bind "$1" "$2" || exit 126
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$2" || exit 126; fi
  shift 3
done
shift
exec "$@"`

// withMounts wraps argv in mountScript. Parents mount before children (/mnt/pvc before
// /mnt/pvc/models), as a container runtime orders them.
func withMounts(mounts []mount, argv []string) []string {
	ms := slices.Clone(mounts)
	slices.SortStableFunc(ms, func(a, b mount) int { return len(a.path) - len(b.path) })
	out := []string{"/bin/sh", "-c", mountScript, "podrunner-mounts"}
	for _, m := range ms {
		mode := "rw"
		if m.readOnly {
			mode = "ro"
		}
		out = append(out, m.local, m.path, mode)
	}
	return append(append(out, "--"), argv...)
}

// The kubelet's bounds on a termination message taken from the logs.
const (
	terminationLogLines = 80
	terminationLogBytes = 2048
)

// logTail is what FallbackToLogsOnError makes a failed container's termination message: the
// last lines of this run's log (from offset on), at most terminationLogLines and
// terminationLogBytes.
func logTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	b = bytes.TrimRight(b[offset:], "\n")
	if n := len(b) - terminationLogBytes; n > 0 {
		b = b[n:]
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > terminationLogLines {
		lines = lines[len(lines)-terminationLogLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// probeContainer runs a container's probes for one run of its process, as
// the kubelet does: the startup probe first, then readiness and liveness
// side by side. A container without a readiness probe is ready once
// started; a failed liveness (or startup) probe kills the process, and the
// restart policy decides what follows.
func (r *Runner) probeContainer(ctx context.Context, ps *podState, i int, pr *prober, kill func()) {
	c := pr.container
	if p := c.StartupProbe; p != nil {
		if !r.probeLoop(ctx, ps, i, pr, startup, p, kill) {
			return
		}
	}
	ps.started(ctx, i)
	if c.LivenessProbe != nil {
		go r.probeLoop(ctx, ps, i, pr, liveness, c.LivenessProbe, kill)
	}
	if c.ReadinessProbe == nil {
		ps.ready(ctx, i, true, "")
		return
	}
	r.probeLoop(ctx, ps, i, pr, readiness, c.ReadinessProbe, kill)
}

// probeLoop probes every period until ctx ends. A startup probe returns
// true at its first success. Readiness turns true after successThreshold
// successes and false after failureThreshold failures (a container not
// ready yet shows each failure's output at once); liveness and startup kill
// the process after failureThreshold failures.
func (r *Runner) probeLoop(ctx context.Context, ps *podState, i int, pr *prober, kind probeKind, p *corev1.Probe, kill func()) bool {
	s := scheduleOf(p)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(s.initialDelay):
	}
	successes, failures := 0, 0
	lastOutput := ""
	for {
		ok, out := pr.probe(ctx, p)
		if ctx.Err() != nil {
			return false
		}
		if ok {
			successes, failures = successes+1, 0
			lastOutput = ""
		} else {
			successes, failures = 0, failures+1
			if out != lastOutput {
				// The kubelet records every failure as an event; one per
				// distinct output keeps the namespace's events readable.
				ps.event(ctx, "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, out))
				lastOutput = out
			}
		}
		switch kind {
		case startup:
			if ok {
				return true
			}
			if failures >= s.failure {
				ps.event(ctx, "Killing", fmt.Sprintf("Container %s failed startup probe, will be restarted", pr.container.Name))
				kill()
				return false
			}
		case liveness:
			if failures >= s.failure {
				ps.event(ctx, "Killing", fmt.Sprintf("Container %s failed liveness probe, will be restarted", pr.container.Name))
				kill()
				return false
			}
		case readiness:
			switch {
			case ok && successes >= s.success:
				ps.ready(ctx, i, true, "")
			case !ok && (failures >= s.failure || !ps.isReady(i)):
				ps.ready(ctx, i, false, fmt.Sprintf("%s probe failed: %s", kind, out))
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(s.period):
		}
	}
}

// podState is what the runner knows of a pod's containers; every change is
// written to the pod's status.
type podState struct {
	r     *Runner
	pod   *corev1.Pod
	start time.Time
	msg   string

	mu       sync.Mutex
	statuses []corev1.ContainerStatus
	// unready holds, per container not ready, why (its last readiness
	// probe failure).
	unready map[string]string
	// pub serializes status writes, so they land in the order of changes.
	pub sync.Mutex
}

func newPodState(r *Runner, pod *corev1.Pod, start time.Time) *podState {
	ps := &podState{r: r, pod: pod, start: start, unready: map[string]string{}}
	for _, c := range pod.Spec.Containers {
		started := false
		ps.statuses = append(ps.statuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Started: &started,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		})
	}
	return ps
}

// running records a container's process start; a container without
// startup and readiness probes is started and ready at once.
func (ps *podState) running(ctx context.Context, i int, at time.Time, restarts int, readyNow bool) {
	ps.mu.Lock()
	st := &ps.statuses[i]
	st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
	st.RestartCount = int32(restarts)
	st.ContainerID = fmt.Sprintf("podrunner://%s/%s/%d", ps.pod.UID, st.Name, restarts)
	st.Ready = readyNow
	st.Started = &readyNow
	ps.mu.Unlock()
	ps.publish(ctx, corev1.PodRunning)
}

func (ps *podState) started(ctx context.Context, i int) {
	ps.mu.Lock()
	if s := ps.statuses[i].Started; s != nil && *s {
		ps.mu.Unlock()
		return
	}
	t := true
	ps.statuses[i].Started = &t
	ps.mu.Unlock()
	ps.publish(ctx, corev1.PodRunning)
}

func (ps *podState) isReady(i int) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.statuses[i].Ready
}

// ready records a readiness result; only a change (or a new reason) is
// written.
func (ps *podState) ready(ctx context.Context, i int, ready bool, why string) {
	ps.mu.Lock()
	st := &ps.statuses[i]
	if st.State.Running == nil || (st.Ready == ready && ps.unready[st.Name] == why) {
		ps.mu.Unlock()
		return
	}
	st.Ready = ready
	if ready {
		delete(ps.unready, st.Name)
	} else {
		ps.unready[st.Name] = why
	}
	ps.mu.Unlock()
	ps.publish(ctx, corev1.PodRunning)
}

// exited records the end of a container's process: terminated for good, or
// waiting to be restarted with the end as its last state.
func (ps *podState) exited(ctx context.Context, i int, started, end time.Time, code int, msg string, restart bool) {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	term := &corev1.ContainerStateTerminated{
		ExitCode: int32(code), Reason: reason, Message: msg, StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(end),
	}
	ps.mu.Lock()
	st := &ps.statuses[i]
	st.Ready = false
	f := false
	st.Started = &f
	delete(ps.unready, st.Name)
	if restart {
		st.LastTerminationState = corev1.ContainerState{Terminated: term}
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off restarting container %s after exit code %d", st.Name, code)}}
	} else {
		st.State = corev1.ContainerState{Terminated: term}
	}
	phase := corev1.PodRunning
	all, failed := true, false
	for _, s := range ps.statuses {
		if s.State.Terminated == nil {
			all = false
		} else if s.State.Terminated.ExitCode != 0 {
			failed = true
		}
	}
	if all {
		phase = corev1.PodSucceeded
		if failed {
			phase = corev1.PodFailed
		}
	}
	ps.mu.Unlock()
	if ctx.Err() == nil {
		ps.publish(ctx, phase)
	}
}

// publish writes the phase, the container statuses and the pod's
// conditions: Ready and ContainersReady hold when every container is
// ready, else they name the containers that are not (as the kubelet does)
// followed by their last readiness probe failure.
func (ps *podState) publish(ctx context.Context, phase corev1.PodPhase) {
	ps.pub.Lock()
	defer ps.pub.Unlock()
	ps.mu.Lock()
	statuses := make([]corev1.ContainerStatus, len(ps.statuses))
	for i := range ps.statuses {
		ps.statuses[i].DeepCopyInto(&statuses[i])
	}
	var names, whys []string
	for _, s := range statuses {
		if !s.Ready {
			names = append(names, s.Name)
			if why := ps.unready[s.Name]; why != "" {
				whys = append(whys, s.Name+": "+why)
			}
		}
	}
	ps.mu.Unlock()
	ready := phase == corev1.PodRunning && len(names) == 0
	msg := ""
	if !ready && len(names) > 0 {
		msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
		if len(whys) > 0 {
			msg += "; " + strings.Join(whys, "; ")
		}
	}
	err := ps.r.updateStatus(ctx, ps.pod, func(st *corev1.PodStatus) {
		st.Phase = phase
		if ps.msg != "" {
			st.Message = ps.msg
		}
		st.ContainerStatuses = statuses
		setReady(st, ready, msg)
	})
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(ps.r.opts.Log, "podrunner: %s/%s: report %s: %v\n", ps.pod.Namespace, ps.pod.Name, phase, err)
	}
}

// event records what the kubelet would (probe failures, kills) on the pod.
func (ps *podState) event(ctx context.Context, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ps.pod.Name + ".", Namespace: ps.pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: ps.pod.Namespace, Name: ps.pod.Name, UID: ps.pod.UID,
		},
		Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: ps.pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := ps.r.kube.CoreV1().Events(ps.pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		fmt.Fprintf(ps.r.opts.Log, "podrunner: %s/%s: event %s: %v\n", ps.pod.Namespace, ps.pod.Name, reason, err)
	}
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

// setReady sets the Initialized, ContainersReady and Ready conditions;
// msg says why the pod is not ready.
func setReady(st *corev1.PodStatus, ready bool, msg string) {
	status, reason := corev1.ConditionFalse, "ContainersNotReady"
	if ready {
		status, reason, msg = corev1.ConditionTrue, "", ""
	}
	now := metav1.Now()
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now}
		if t == corev1.PodInitialized {
			c = corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
		}
		found := false
		for i := range st.Conditions {
			if st.Conditions[i].Type != t {
				continue
			}
			found = true
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
		}
		if !found {
			st.Conditions = append(st.Conditions, c)
		}
	}
}

// MountNamespaces reports whether containers can get their own mount namespace with bind mounts
// here (Options.MountVolumes): root, and a kernel and sandbox that allow unshare(CLONE_NEWNS)
// and mount(8). It tries once: a bind mount of a temporary folder onto another.
func MountNamespaces() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	src, err := os.MkdirTemp("", "podrunner-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	argv := withMounts([]mount{{path: filepath.Join(src, "target"), local: src}}, []string{"/bin/true"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bind mount in a new mount namespace: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
