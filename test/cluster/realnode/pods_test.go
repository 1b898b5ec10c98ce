package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gangboost/gangboost/test/cluster"
)

// TestPodReachesAPIServer runs a container that calls the API server as its service account
// through the kubernetes Service's ClusterIP (kube-proxy's rules to the node IP), scheduled by
// kube-scheduler onto the real node; its answer comes back as the termination message and
// through pods/log (the API server asking the kubelet).
func TestPodReachesAPIServer(t *testing.T) {
	c := cluster.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const image = "localhost/gangboost-apiprobe:test"
	if err := c.ImportGoProgram(ctx, image, "./test/cluster/realnode/apiprobe"); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c, "realnode-api")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "apiprobe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{cluster.RealNodeLabel: "true"},
			Containers: []corev1.Container{{
				Name: "probe", Image: image, ImagePullPolicy: corev1.PullNever,
				SecurityContext: restricted(),
			}},
		},
	}
	t0 := time.Now()
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, c.Kube, ns, pod.Name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	t.Logf("apiprobe pod finished %s after create", time.Since(t0).Round(time.Millisecond))
	var msg string
	if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
		msg = cs[0].State.Terminated.Message
	}
	want := "authenticated as system:serviceaccount:" + ns + ":default at https://10.96.0.1:443"
	if p.Status.Phase != corev1.PodSucceeded || msg != want {
		t.Fatalf("apiprobe pod %s on %s: termination message %q, want %q", p.Status.Phase, p.Spec.NodeName, msg, want)
	}
	if p.Spec.NodeName != cluster.RealNodeName || p.Status.PodIP == "" {
		t.Errorf("apiprobe ran on node %q with pod IP %q, want the real node and a bridge address", p.Spec.NodeName, p.Status.PodIP)
	}
	logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || strings.TrimSpace(string(logs)) != want {
		t.Errorf("pods/log through the kubelet: %q, %v; want %q", logs, err, want)
	}
}

// restricted is the container security context the gangboost manifests set: non-root 65532, no
// capabilities, no privilege escalation, read-only root, seccomp RuntimeDefault.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(int64(65532)),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// namespace creates a namespace for one test and waits for its default service account.
func namespace(t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s: no default service account: %v", name, err)
	}
	return name
}

// waitPod waits until done(pod) holds and returns the pod; on timeout it fails with the pod's
// status and events.
func waitPod(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return done(p), nil
	})
	if err != nil {
		var events []string
		if ev, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, e := range ev.Items {
				events = append(events, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message))
			}
		}
		status := "not found"
		if last != nil {
			status = fmt.Sprintf("%s on %q %+v", last.Status.Phase, last.Spec.NodeName, last.Status.ContainerStatuses)
		}
		t.Fatalf("pod %s/%s: %v; status %s\nevents:\n  %s", ns, name, err, status, strings.Join(events, "\n  "))
	}
	return last
}
