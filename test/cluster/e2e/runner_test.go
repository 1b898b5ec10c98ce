package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gangboost/gangboost/test/cluster"
)

// TestPodRunner checks what a pod's process gets from the pod runner and
// what the API server gets back: the Downward API, ConfigMap keys, $(VAR)
// expansion, a Service name mapped to 127.0.0.1, the claim's folder behind
// its mount path, and the exit code in the container status.
func TestPodRunner(t *testing.T) {
	e := newEnv(t, "runner")
	ctx := context.Background()
	if _, err := e.c.Kube.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"rounds": "20"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Kube.CoreV1().Services(e.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "tracker"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 9999}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `printf '%s\n' "$POD_NAME" "$POD_NS" "$ROUNDS" "$TRACKER" "$URL" "$HOSTNAME" > "$OUT"; exit 3`
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeName:      e.c.Nodes[1],
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "ROUNDS", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "rounds"}}},
					{Name: "TRACKER", Value: "tracker." + e.ns + ".svc.cluster.local:9999"},
					{Name: "URL", Value: "http://$(TRACKER)/health"},
					// Paths are mapped when a whole value (or the part after
					// "=") lies under a mount path, not inside a script.
					{Name: "OUT", Value: pvcMountPath + "/env.txt"},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: pvcMountPath}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
			}}},
		},
	}
	e.create(pod)
	var got *corev1.Pod
	cluster.WaitFor(e.t, 90*time.Second, "probe pod Failed", func(ctx context.Context) (bool, error) {
		var err error
		got, err = e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, err
	})
	if n := len(got.Status.ContainerStatuses); n != 1 || got.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("container statuses = %+v, want one terminated", got.Status.ContainerStatuses)
	}
	if code := got.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
	if got.Status.PodIP != "127.0.0.1" {
		t.Errorf("podIP = %q, want 127.0.0.1", got.Status.PodIP)
	}
	b, err := os.ReadFile(filepath.Join(e.pvcDir, "env.txt"))
	if err != nil {
		t.Fatalf("the pod's file on the claim: %v", err)
	}
	want := []string{"probe", e.ns, "20", "127.0.0.1:9999", "http://127.0.0.1:9999/health", "probe"}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("env seen by the pod = %q, want %q", lines, want)
	}
}

// TestPodRunnerProbes checks the probes the pod runner runs for a
// kubelet: a tcpSocket readiness probe turns the pod Ready, and an httpGet
// liveness probe that keeps failing restarts the container, with the
// kubelet's events saying why.
func TestPodRunnerProbes(t *testing.T) {
	e := newEnv(t, "probes")
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 serves the probed port: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeName:      e.c.Nodes[0],
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{
				Name: "http", Image: "python", Command: []string{python, "-m", "http.server", "--bind", "127.0.0.1", fmt.Sprint(port)},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/missing", Port: intstr.FromInt(port)}},
					InitialDelaySeconds: 2, PeriodSeconds: 1, FailureThreshold: 2,
				},
			}},
		},
	}
	start := time.Now()
	e.create(pod)
	ready := func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	cluster.WaitFor(e.t, 90*time.Second, "pod Ready from its readiness probe", func(ctx context.Context) (bool, error) {
		got, err := e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && ready(got), err
	})
	t.Logf("Ready after %s", time.Since(start).Round(time.Millisecond))
	cluster.WaitFor(e.t, 90*time.Second, "the container restarted by its liveness probe", func(ctx context.Context) (bool, error) {
		got, err := e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || len(got.Status.ContainerStatuses) != 1 {
			return false, err
		}
		st := got.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil, nil
	})
	t.Logf("restarted after %s", time.Since(start).Round(time.Millisecond))
	// A server that took longer than the liveness probe's initial delay to listen (a loaded
	// machine) fails its first probes with "connection refused" rather than the 404: the
	// container restarts all the same, and a later run of it gets the 404.
	want := []string{
		"Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 404",
		"Killing: Container http failed liveness probe, will be restarted",
	}
	cluster.WaitFor(e.t, 90*time.Second, "the liveness probe's events", func(ctx context.Context) (bool, error) {
		events, err := e.c.Kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, ev := range events.Items {
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		all := strings.Join(seen, "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				return false, fmt.Errorf("events lack %q:\n%s", w, all)
			}
		}
		return true, nil
	})
}

// TestPodRunnerPortConflict checks what the pod runner does with a pod whose containerPort
// someone else on the host already listens on (another test control plane's pod, here the test
// itself): the pod fails with reason PortConflict before any container runs, rather than its
// process reaching a stranger's server, and the runner's failure output names it, as no log file
// of its containers does.
func TestPodRunnerPortConflict(t *testing.T) {
	e := newEnv(t, "portconflict")
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeName:      e.c.Nodes[0],
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox", Command: []string{"sh", "-c", "exit 0"},
				Ports: []corev1.ContainerPort{{Name: "tracker", ContainerPort: int32(port)}},
			}},
		},
	}
	e.create(pod)
	var got *corev1.Pod
	cluster.WaitFor(e.t, 90*time.Second, "pod Failed", func(ctx context.Context) (bool, error) {
		var err error
		got, err = e.c.Kube.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, err
	})
	if got.Status.Reason != "PortConflict" || !strings.Contains(got.Status.Message, fmt.Sprintf("containerPort %d is in use on 127.0.0.1", port)) {
		t.Errorf("pod status %s: %s; want PortConflict naming port %d", got.Status.Reason, got.Status.Message, port)
	}
	if _, err := e.c.Runner.PodLog(e.ns, pod.Name, "main"); err == nil {
		t.Errorf("the refused pod's container has a log: it ran")
	}
	want := fmt.Sprintf("%s/%s: PortConflict: containerPort %d is in use", e.ns, pod.Name, port)
	if tails := e.c.Runner.LogTails(5); !strings.Contains(tails, want) {
		t.Errorf("the runner's failure output lacks %q:\n%s", want, tails)
	}
}
