package podrunner

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// listen serves h on a free port of 127.0.0.1 and returns the port.
func listen(t *testing.T) (net.Listener, int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, int32(l.Addr().(*net.TCPAddr).Port)
}

func TestProbeHTTP(t *testing.T) {
	l, port := listen(t)
	ready := false
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/health/ready" || !strings.HasPrefix(r.UserAgent(), "kube-probe/") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"no model file in /mnt/models"}`+"\n")
		}
	}))
	pr := &prober{container: corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http1", ContainerPort: port}}}}
	for _, p := range []intstr.IntOrString{intstr.FromInt32(port), intstr.FromString("http1")} {
		probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/v2/health/ready", Port: p}}}
		ready = false
		ok, out := pr.probe(context.Background(), probe)
		want := `HTTP probe failed with statuscode: 503: {"error":"no model file in /mnt/models"}`
		if ok || out != want {
			t.Errorf("port %v: probe = %v %q, want false %q", p.String(), ok, out, want)
		}
		ready = true
		if ok, out := pr.probe(context.Background(), probe); !ok {
			t.Errorf("port %v: probe of a ready server failed: %s", p.String(), out)
		}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("grpc")}}}
	if ok, out := pr.probe(context.Background(), probe); ok || !strings.Contains(out, `no port named "grpc"`) {
		t.Errorf("unknown port name: %v %q", ok, out)
	}
}

func TestProbeTCPAndGRPC(t *testing.T) {
	l, port := listen(t)
	s := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	pr := &prober{container: corev1.Container{Name: "c"}}
	tcp := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}}
	if ok, out := pr.probe(context.Background(), tcp); !ok {
		t.Errorf("tcp probe of a listening port: %s", out)
	}
	gp := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port}}}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if ok, out := pr.probe(context.Background(), gp); ok || !strings.Contains(out, "NOT_SERVING") {
		t.Errorf("grpc probe of NOT_SERVING: %v %q", ok, out)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if ok, out := pr.probe(context.Background(), gp); !ok {
		t.Errorf("grpc probe of SERVING: %s", out)
	}
	s.Stop()
	l.Close()
	if ok, _ := pr.probe(context.Background(), tcp); ok {
		t.Error("tcp probe of a closed port succeeded")
	}
}

// TestPodStateReady checks the pod conditions written from probe results:
// not ready with the probe's output in the message, then ready.
func TestPodStateReady(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kserve-container"}, {Name: "sidecar"}}},
	}
	kube := fake.NewSimpleClientset(pod)
	r := &Runner{kube: kube, opts: Options{Log: io.Discard}}
	ctx := context.Background()
	ps := newPodState(r, pod, metav1.Now().Time)
	ps.running(ctx, 0, metav1.Now().Time, 0, false)
	ps.running(ctx, 1, metav1.Now().Time, 0, true)
	ps.ready(ctx, 0, false, "Readiness probe failed: HTTP probe failed with statuscode: 503: no model file in /x")
	cond := func() corev1.PodCondition {
		got, err := kube.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c
			}
		}
		t.Fatalf("no Ready condition in %+v", got.Status)
		return corev1.PodCondition{}
	}
	c := cond()
	want := "containers with unready status: [kserve-container]; kserve-container: Readiness probe failed: HTTP probe failed with statuscode: 503: no model file in /x"
	if c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" || c.Message != want {
		t.Errorf("Ready = %s %s %q, want False ContainersNotReady %q", c.Status, c.Reason, c.Message, want)
	}
	ps.ready(ctx, 0, true, "")
	if c := cond(); c.Status != corev1.ConditionTrue || c.Message != "" {
		t.Errorf("Ready = %s %q, want True", c.Status, c.Message)
	}
}

func TestServiceAddr(t *testing.T) {
	kube := fake.NewSimpleClientset(
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "iris-predictor", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "iris"}, Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "grpc", Port: 81, TargetPort: intstr.FromString("h2c")},
				{Name: "same", Port: 9000},
			}},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "iris-1", Namespace: "ns", Labels: map[string]string{"app": "iris"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 8081}}}}},
		},
	)
	for port, want := range map[int32]string{80: "127.0.0.1:8080", 81: "127.0.0.1:8081", 9000: "127.0.0.1:9000"} {
		got, err := ServiceAddr(context.Background(), kube, "ns", "iris-predictor", port)
		if err != nil || got != want {
			t.Errorf("ServiceAddr(port %d) = %q, %v; want %q", port, got, err, want)
		}
	}
	if _, err := ServiceAddr(context.Background(), kube, "ns", "iris-predictor", 82); err == nil {
		t.Error("a port the Service lacks gave an address")
	}
}
