package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// StepPods is a localrun.Executor that runs each step of a pipeline as a pod on the control
// plane, the pod KFP would run for it: container "main" with the executor's image, its command
// line with the placeholders resolved, its env, each pvcMount's claim at its mount path, the
// run's service account, restartPolicy Never. On a fake node the pod runner gives the container
// its volumes at their mount paths and its service account's token where rest.InClusterConfig
// reads it; with RealNode the kubelet runs it as a container of its image. Either way the
// component talks to the API server as that account, with only what its RBAC grants.
//
// What stands in for KFP's launcher: the step's ExecutorInput names files under the local
// run's pipeline root (file:// artifact URIs, the ExecutorOutput's file), which the pod gets
// as a hostPath volume at the same path; the runner reads the outputs back from there, where
// KFP's launcher would upload them from the pod's /tmp and /minio.
type StepPods struct {
	C *Cluster
	// Namespace is where the pods run; ServiceAccount the run's service account (KFP runs
	// every step of a run under one).
	Namespace, ServiceAccount string
	// Tolerations of the step pods: with a real node, the fake nodes are tainted so that only
	// the step pods, which the pod runner runs, go there (ProcessNodeTaint).
	Tolerations []corev1.Toleration
	// RealNode runs the step pods on the real node (Options.RealNode) as KFP runs them: containers
	// of the executor's image (imported into the node's containerd: imagePullPolicy
	// IfNotPresent, there is no registry) as uid 65532 with the manifests' security context, the
	// service account's token mounted by the kubelet, each claim its PersistentVolume, the cluster
	// DNS; the log through pods/log. The pipeline root's folder is made the step's uid's before
	// each step, since a hostPath volume keeps the host's owners. Without it the pod runner runs
	// them as processes on a fake node.
	RealNode bool

	mu   sync.Mutex
	pods []*corev1.Pod
}

// StepLabel carries a step pod's task name.
const StepLabel = "gangboost.io/pipeline-task"

var _ localrun.Executor = (*StepPods)(nil)

// MountsClaims: a pod sees each claim at its mount path.
func (s *StepPods) MountsClaims() bool { return true }

// Pods are the step pods as they ended, in the order they ran.
func (s *StepPods) Pods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev1.Pod(nil), s.pods...)
}

// StepUID is the uid (and gid) the gangboost image runs its steps as on the real node.
const StepUID = 65532

// Execute creates the step's pod, follows its log until it ends and returns its exit code.
// When ctx ends first the pod is deleted (SIGTERM, then SIGKILL after its grace period).
func (s *StepPods) Execute(ctx context.Context, c *localrun.Container) (int, error) {
	pod := s.pod(c)
	kube := s.C.Kube
	if s.RealNode {
		// The step writes its ExecutorOutput and output artifacts under the pipeline root, a
		// hostPath volume that keeps the host's owners.
		if err := chownTree(c.PipelineRoot, StepUID); err != nil {
			return -1, fmt.Errorf("pipeline root for uid %d: %w", StepUID, err)
		}
	}
	created, err := kube.CoreV1().Pods(s.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		return -1, fmt.Errorf("create pod: %w", err)
	}
	var follow interface{ read(end bool) }
	if s.RealNode {
		follow = &podLogStream{kube: kube, ns: s.Namespace, name: created.Name, out: c.Output}
	} else {
		follow = &logFollower{path: filepath.Join(s.C.LogDir, "pods", fmt.Sprintf("%s_%s_main.log", s.Namespace, created.Name)), out: c.Output}
	}
	var final *corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(s.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; ctx bounds the wait
		}
		if ls, ok := follow.(*podLogStream); ok {
			ls.started(p)
		} else {
			follow.read(false)
		}
		final = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		s.deletePod(created.Name)
		follow.read(true)
		return 137, fmt.Errorf("pod %s/%s stopped: %w", s.Namespace, created.Name, ctx.Err())
	}
	if ls, ok := follow.(*podLogStream); ok {
		ls.started(final)
	}
	follow.read(true)
	s.mu.Lock()
	s.pods = append(s.pods, final)
	s.mu.Unlock()
	// A finished step's pod goes, as Argo's pod GC removes it on completion: what it did is in
	// its outputs, its log and Pods.
	s.deletePod(created.Name)
	for _, st := range final.Status.ContainerStatuses {
		if t := st.State.Terminated; t != nil {
			if t.ExitCode != 0 {
				return int(t.ExitCode), fmt.Errorf("pod %s/%s: container main exited %d (%s)", s.Namespace, created.Name, t.ExitCode, t.Reason)
			}
			if final.Status.Phase != corev1.PodSucceeded {
				return 0, fmt.Errorf("pod %s/%s: phase %s", s.Namespace, created.Name, final.Status.Phase)
			}
			return 0, nil
		}
	}
	return -1, fmt.Errorf("pod %s/%s %s without running its container: %s %s", s.Namespace, created.Name, final.Status.Phase, final.Status.Reason, final.Status.Message)
}

// pod is the step's pod.
func (s *StepPods) pod(c *localrun.Container) *corev1.Pod {
	name := dnsLabel(c.Task)
	var env []corev1.EnvVar
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	vols := []corev1.Volume{{Name: "pipeline-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: c.PipelineRoot, Type: &dirOrCreate}}}}
	mounts := []corev1.VolumeMount{{Name: "pipeline-root", MountPath: c.PipelineRoot}}
	i := 0
	for path, claim := range c.Claims {
		vol := fmt.Sprintf("pvc-%d", i)
		i++
		vols = append(vols, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: path})
	}
	grace := int64(10)
	var podSec *corev1.PodSecurityContext
	var sec *corev1.SecurityContext
	var nodeSelector map[string]string
	if s.RealNode {
		// As KFP runs the step: no host paths of this machine's runner in its env (the local
		// backends' bin and state folders), a writable /tmp beside the read-only root.
		env = slices.DeleteFunc(env, func(e corev1.EnvVar) bool {
			return e.Name == kfp.EnvBinDir || e.Name == kfp.EnvLocalState
		})
		vols = append(vols, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
		uid := int64(StepUID)
		podSec = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		sec = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		nodeSelector = map[string]string{RealNodeLabel: "true"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name + "-" + rand.String(5),
			Labels: map[string]string{StepLabel: name, "pipelines.kubeflow.org/v2_component": "true"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:            s.ServiceAccount,
			Tolerations:                   s.Tolerations,
			NodeSelector:                  nodeSelector,
			SecurityContext:               podSec,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Volumes:                       vols,
			Containers: []corev1.Container{{
				Name: "main", Image: c.Image, Command: c.Argv, Env: env, VolumeMounts: mounts,
				ImagePullPolicy:          corev1.PullIfNotPresent,
				SecurityContext:          sec,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

func (s *StepPods) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.C.Kube.CoreV1().Pods(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := s.C.Kube.CoreV1().Pods(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsLabel makes a task name a pod name's prefix.
func dnsLabel(task string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(task), "-"), "-")
	if len(s) > 50 {
		s = s[:50]
	}
	if s == "" {
		s = "step"
	}
	return s
}

// logFollower passes on the lines the pod runner writes to a container's log file, without
// the runner's own "$ command" first line and "exit: N" last line.
type logFollower struct {
	path    string
	out     func(string)
	offset  int64
	partial []byte
	lines   int
}

// read passes on the complete lines written since the last read; at the end, the rest too.
func (f *logFollower) read(end bool) {
	fh, err := os.Open(f.path)
	if err != nil {
		return // not written yet
	}
	defer fh.Close()
	if _, err := fh.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(fh)
	if err != nil {
		return
	}
	data := append(f.partial, b...)
	f.offset += int64(len(b))
	f.partial = nil
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		f.line(string(data[:i]))
		data = data[i+1:]
	}
	if end && len(data) > 0 {
		f.line(string(data))
		data = nil
	}
	f.partial = append([]byte(nil), data...)
}

func (f *logFollower) line(l string) {
	f.lines++
	if (f.lines == 1 && strings.HasPrefix(l, podrunner.CommandLinePrefix)) || podrunner.IsExitLine(l) {
		return
	}
	f.out(l)
}

// podLogStream passes on a real node's container log through pods/log (the kubelet's), followed
// from when the container has started until it ends.
type podLogStream struct {
	kube       kubernetes.Interface
	ns, name   string
	out        func(string)
	done       chan struct{}
	cancel     context.CancelFunc
	terminated bool
}

// started begins following the log once p's container has started.
func (l *podLogStream) started(p *corev1.Pod) {
	if l.done != nil {
		return
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != "main" || (st.State.Running == nil && st.State.Terminated == nil) {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go func() {
			defer close(l.done)
			rc, err := l.kube.CoreV1().Pods(l.ns).GetLogs(l.name, &corev1.PodLogOptions{Container: "main", Follow: true}).Stream(ctx)
			if err != nil {
				l.out(fmt.Sprintf("(pods/log of %s/%s: %v)", l.ns, l.name, err))
				return
			}
			defer rc.Close()
			sc := bufio.NewScanner(rc)
			sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
			for sc.Scan() {
				l.out(sc.Text())
			}
		}()
	}
}

// read at the end waits for the followed log to end with the container (a minute at most).
func (l *podLogStream) read(end bool) {
	if !end || l.done == nil {
		return
	}
	select {
	case <-l.done:
	case <-time.After(time.Minute):
	}
	l.cancel()
	<-l.done
}

// chownTree makes dir and everything in it belong to uid (and its group).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
}

// ComponentCommand is components/<name>/component.yaml's image and command line as KFP's launcher
// resolves it for the ExecutorInput input ({{$}} as JSON): defaults filled in, placeholders
// replaced. A placeholder KFP's launcher would leave fails t.
func ComponentCommand(t testing.TB, name, input string) (image string, argv []string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := localrun.ReadPackage(filepath.Join(root, "components", name, "component.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	comp := pkg.Spec.GetComponents()["comp-"+name]
	exec := pkg.Executors[comp.GetExecutorLabel()].GetContainer()
	if exec == nil {
		t.Fatalf("components/%s/component.yaml: no container executor for comp-%s", name, name)
	}
	in := &pipelinespec.ExecutorInput{}
	if err := protojson.Unmarshal([]byte(input), in); err != nil {
		t.Fatal(err)
	}
	argv, notes, err := localrun.CompileCommand(in, localrun.WithDefaults(in, comp), exec.GetCommand(), exec.GetArgs())
	if err != nil || len(notes) > 0 {
		t.Fatalf("resolve components/%s/component.yaml's command: %v %q", name, err, notes)
	}
	return exec.GetImage(), argv
}
