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
//     path; paths inside scripts (sh -c '... /mnt/pvc/x') are not. With
//     Options.MountVolumes (root) the container also runs in its own mount
//     namespace with each volume bind-mounted at its mount path, so any
//     path works as in a container;
//   - projected volumes filled as the kubelet fills them (a service-account
//     token from the TokenRequest API, ConfigMap and Secret keys, Downward
//     API fields) and KUBERNETES_SERVICE_HOST/PORT naming the API server,
//     so rest.InClusterConfig authenticates as the pod's service account.
//
// Networking: every pod shares the host network, like hostNetwork pods, so
// a containerPort is a port on 127.0.0.1. Replicas of one job declare the
// same port (the training operator's MASTER_PORT) though only rank 0
// listens on it, so a port belongs to the pod's top controller (the
// XGBoostJob; the Deployment of a ReplicaSet's pod, where a rollout's pod of
// a newer revision takes the port over and the older pod stays, stopped and
// not ready, until scaled down): pods of another owner declaring a port
// in use fail with reason PortConflict instead of reaching a stranger's
// server, and so does a pod whose port is already listened on at 127.0.0.1 by
// someone else. Tests give each job its own port (XGBoostJob: the container
// port named xgboostjob-port). A Service is reached at 127.0.0.1 and its
// targetPort (ServiceAddr): there is no kube-proxy.
//
// Probes: startup, readiness and liveness probes (httpGet, tcpSocket, grpc,
// exec) run against 127.0.0.1 with the probe's timing, as the kubelet runs
// them. A container is ready once its readiness probe passes (at once
// without one); the pod's Ready and ContainersReady conditions follow, and
// when false their message names the unready containers followed by their
// last probe failure, including the start of an HTTP probe's response body
// (where a server says why it is not ready; the kubelet keeps probe output
// for events only). Each distinct failure is also an Unhealthy event. A
// failed liveness or startup probe kills the container, which the restart
// policy then restarts.
//
// Logs: each container's output goes to <LogDir>/<namespace>_<pod>_<container>.log, every run
// of it between the runner's "$ command" and "exit: N" lines; with Options.LogServer the runner
// also serves them as the kubelet's container log endpoint, so pods/log works.
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
	"path/filepath"
	"slices"
	"strconv"
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

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
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
	// MountVolumes gives each container its own mount namespace in which the pod's volumes are
	// bound at their mount paths, as in a container, so a program that opens a fixed path finds
	// it: rest.InClusterConfig's service-account token under
	// /var/run/secrets/kubernetes.io/serviceaccount, a claim's /mnt/pvc named inside a JSON
	// argument (KFP's {{$}}), KFP's /minio scratch. It needs root (CAP_SYS_ADMIN) and the host's
	// mount(8); a mount path missing on this machine is created once, as the empty folder the
	// mount hides. Mounts never reach the host's namespace. (Path rewriting stays on: a
	// rewritten path names the same folder.)
	MountVolumes bool
	// APIServer is the host:port at which containers reach the API server
	// (KUBERNETES_SERVICE_HOST/PORT, which rest.InClusterConfig reads).
	APIServer string
	// HTTPProxy, when set, is every container's HTTP_PROXY and HTTPS_PROXY (NO_PROXY
	// 127.0.0.1,localhost; gRPC clients tunnel through it with CONNECT): there is
	// no cluster DNS or kube-proxy, and a proxy that routes Service names (cluster.ServiceProxy)
	// makes http://<service>.<namespace>.svc.cluster.local reachable from a pod.
	HTTPProxy string
	// LogServer, when set, is the host:port of the kubelet's log endpoint this runner serves
	// over TLS with LogServerCert and LogServerKey (see serveLogs): the port the nodes' status
	// names as daemonEndpoints.kubeletEndpoint, so pods/log works.
	LogServer, LogServerCert, LogServerKey string
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
	// refused are the pods failed before any container ran ("ns/name: reason: message"), which
	// leave no log file: LogTails names them.
	refused []string
}

// portHold is a port claimed by the running pods of one owner, with each
// pod's revision of that owner.
type portHold struct {
	owner string
	pods  map[types.UID]int64
}

// revisionAnnotation is where the Deployment controller numbers the
// ReplicaSets of a Deployment's rollouts.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// portOwner is the pod's top controller: the Deployment of a ReplicaSet's
// pod (so a rollout's new ReplicaSet takes over its ports), else the pod's
// controller, else the pod itself; and the pod's revision of that owner
// (the ReplicaSet's, 0 for other owners).
func (r *Runner) portOwner(ctx context.Context, pod *corev1.Pod) (string, int64) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "Pod/" + pod.Namespace + "/" + pod.Name, 0
	}
	if ref.Kind == "ReplicaSet" {
		rs, err := r.kube.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if top := metav1.GetControllerOf(rs); top != nil {
				rev, _ := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
				return top.Kind + "/" + pod.Namespace + "/" + top.Name, rev
			}
		}
	}
	return ref.Kind + "/" + pod.Namespace + "/" + ref.Name, 0
}

// podProc is a pod being run.
type podProc struct {
	key    string
	uid    types.UID
	cancel context.CancelFunc
	exited chan struct{}
	ports  []int
	mu     sync.Mutex
	// containers are the running containers' processes.
	containers []*procgroup.Process
	// state is the pod's status as reported, once its containers start.
	state *podState
}

// handedOver reports a pod whose processes were stopped for a newer pod
// of its owner: running, its containers waiting and not ready.
func (proc *podProc) handedOver(msg string) {
	proc.mu.Lock()
	ps := proc.state
	proc.mu.Unlock()
	if ps == nil {
		return
	}
	ps.mu.Lock()
	for i := range ps.statuses {
		st := &ps.statuses[i]
		st.Ready = false
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PortsHandedOver", Message: msg}}
		ps.unready[st.Name] = msg
	}
	ps.mu.Unlock()
	ps.publish(context.Background(), corev1.PodRunning)
}

// New creates a Runner; Run starts it.
func New(kube kubernetes.Interface, o Options) (*Runner, error) {
	if o.NodeSelector == nil {
		return nil, errors.New("podrunner: Options.NodeSelector is required")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.MountVolumes && os.Geteuid() != 0 {
		return nil, errors.New("podrunner: Options.MountVolumes needs root (check with MountNamespaces first)")
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
	if r.opts.LogServer != "" {
		if err := r.serveLogs(ctx); err != nil {
			return err
		}
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
	owner, revision := r.portOwner(ctx, pod)
	r.mu.Lock()
	var older []*podProc
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
			continue
		}
		for uid, rev := range h.pods {
			switch {
			case rev > revision:
				// A pod of an older rollout (its ReplicaSet replacing a
				// lost pod) waits for the newer one to let go.
				r.mu.Unlock()
				fmt.Fprintf(r.opts.Log, "podrunner: %s waits: containerPort %d is held by a newer revision (%d > %d) of %s\n", key, port, rev, revision, owner)
				return nil
			case rev < revision && r.running[uid] != nil && !slices.Contains(older, r.running[uid]):
				older = append(older, r.running[uid])
			}
		}
	}
	if len(older) > 0 {
		r.mu.Unlock()
		// A rollout's new pod: on a real cluster it would run beside the
		// old one on its own IP until ready; sharing the host's ports, it
		// takes them over, and the old pod stays, not ready, until the
		// Deployment scales its ReplicaSet down.
		for _, p := range older {
			p.stop(r.opts.GracePeriod)
			p.handedOver(fmt.Sprintf("containerPorts %v handed over to pod %s of revision %d of %s", ports, pod.Name, revision, owner))
		}
		return r.start(ctx, pod)
	}
	pctx, cancel := context.WithCancel(ctx)
	proc := &podProc{key: key, uid: pod.UID, cancel: cancel, exited: make(chan struct{}), ports: ports}
	for _, port := range ports {
		h := r.ports[port]
		if h == nil {
			h = &portHold{owner: owner, pods: map[types.UID]int64{}}
			r.ports[port] = h
		}
		h.pods[pod.UID] = revision
	}
	r.running[pod.UID] = proc
	r.mu.Unlock()
	go r.run(pctx, pod.DeepCopy(), proc)
	return nil
}

// portFree reports an error when someone listens on port. A port whose only sockets are closed
// connections in TIME_WAIT is free: a pod in a network namespace of its own would not see them,
// and libxgboost's tracker, which binds without SO_REUSEADDR, leaves such sockets that refuse any
// bind for a minute after its job ended (the next job's rank 0 takes another port then).
func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err == nil {
		return l.Close()
	}
	if listening, lerr := listeningOn(port); lerr == nil && !listening {
		return nil
	}
	return err
}

// listeningOn reports whether a TCP socket listens on port, from /proc/net/tcp and tcp6 (state
// 0A is LISTEN).
func listeningOn(port int) (bool, error) {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
				return true, nil
			}
		}
	}
	return false, nil
}

// signal sends sig to the process groups of the pod's containers.
func (proc *podProc) signal(sig syscall.Signal) {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	// exec removes a container once it has ended, so every one here runs.
	for _, c := range proc.containers {
		c.Signal(sig)
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
	r.mu.Lock()
	r.refused = append(r.refused, fmt.Sprintf("%s/%s: %s: %s", pod.Namespace, pod.Name, reason, msg))
	r.mu.Unlock()
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
		setReady(st, false, msg)
	})
}

// PodLog returns what a pod's container wrote.
func (r *Runner) PodLog(namespace, pod, container string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.opts.LogDir, fmt.Sprintf("%s_%s_%s.log", namespace, pod, container)))
	return string(b), err
}

// LogTails returns the last n lines of every pod log, and the pods failed before any container
// ran, for failure output.
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
	r.mu.Lock()
	refused := slices.Clone(r.refused)
	r.mu.Unlock()
	if len(refused) > 0 {
		b.WriteString("===== pods failed before any container ran =====\n" + strings.Join(refused, "\n") + "\n")
	}
	return b.String()
}
