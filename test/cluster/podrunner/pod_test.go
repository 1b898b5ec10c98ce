package podrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"A": "1", "HOST": "job-master-0"}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(A)", "x1y1"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"tcp://$(HOST):$(A)", "tcp://job-master-0:1"},
		{"$(A", "$(A"},
		{"cost $5", "cost $5"},
		{"end$", "end$"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, vals); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRewriteHosts(t *testing.T) {
	p := &preparer{
		pod:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-worker-0", Namespace: "team"}},
		hosts: map[string]bool{"job-master-0": true, "job-worker-0": true, "job-worker-1": true, "job": true},
	}
	tests := []struct{ in, want string }{
		{"job-master-0", "127.0.0.1"},
		{"job-master-0:9999", "127.0.0.1:9999"},
		{"job-worker-0,job-worker-1", "127.0.0.1,127.0.0.1"},
		{"job-master-0.team.svc.cluster.local", "127.0.0.1"},
		{"job-master-0.team.svc:9999", "127.0.0.1:9999"},
		{"job-worker-0.job.team.svc.cluster.local", "127.0.0.1"},
		// <hostname>.<subdomain> as the resolver's search path completes it:
		// Kubeflow Trainer v2's DMLC_TRACKER_URI (<job>-node-0-0.<job>).
		{"job-worker-0.job", "127.0.0.1"},
		{"job-worker-0.job:29400", "127.0.0.1:29400"},
		{"job-worker-0.unknown", "job-worker-0.unknown"},
		{"http://job-master-0:8080/path", "http://127.0.0.1:8080/path"},
		// Other namespaces, other names and plain values stay.
		{"job-master-0.other.svc", "job-master-0.other.svc"},
		{"unknown-host:9999", "unknown-host:9999"},
		{"9999", "9999"},
		{"iris", "iris"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := p.rewriteHosts(tt.in); got != tt.want {
			t.Errorf("rewriteHosts(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRewritePath(t *testing.T) {
	p := &preparer{mounts: map[string][]mount{
		"xgboost": {
			{path: "/mnt/pvc/models", local: "/data/models-volume"},
			{path: "/mnt/pvc", local: "/data/pvc"},
		},
	}}
	tests := []struct{ in, want string }{
		{"/mnt/pvc", "/data/pvc"},
		{"/mnt/pvc/models/iris/v1", "/data/models-volume/iris/v1"},
		{"/mnt/pvc/datasets/iris/train.csv", "/data/pvc/datasets/iris/train.csv"},
		{"--model-dir=/mnt/pvc/models/iris/v1", "--model-dir=/data/models-volume/iris/v1"},
		{"/mnt/pvcx", "/mnt/pvcx"},
		{"relative/mnt/pvc", "relative/mnt/pvc"},
		{"key=/mnt/pvc", "key=/mnt/pvc"},
	}
	for _, tt := range tests {
		if got := p.rewritePath("xgboost", tt.in); got != tt.want {
			t.Errorf("rewritePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := p.rewritePath("other", "/mnt/pvc"); got != "/mnt/pvc" {
		t.Errorf("container without mounts: got %q", got)
	}
}

func TestFieldRef(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u-1",
			Labels:      map[string]string{"training.kubeflow.org/replica-index": "1"},
			Annotations: map[string]string{"a": "b"},
		},
		Spec: corev1.PodSpec{NodeName: "gpu-node-1", ServiceAccountName: "sa"},
	}
	tests := []struct {
		path, want string
		wantErr    bool
	}{
		{"metadata.name", "p", false},
		{"metadata.namespace", "ns", false},
		{"metadata.uid", "u-1", false},
		{"spec.nodeName", "gpu-node-1", false},
		{"spec.serviceAccountName", "sa", false},
		{"status.podIP", "127.0.0.1", false},
		{"metadata.labels['training.kubeflow.org/replica-index']", "1", false},
		{"metadata.annotations['a']", "b", false},
		{"metadata.annotations['missing']", "", false},
		{"spec.unknown", "", true},
	}
	for _, tt := range tests {
		got, err := fieldRef(pod, tt.path)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("fieldRef(%q) = %q, %v; want %q, error %v", tt.path, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestResourceFieldRef(t *testing.T) {
	c := corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	tests := []struct {
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "2"},
		{corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "1500"},
		{corev1.ResourceFieldSelector{Resource: "requests.cpu"}, "1"},
		{corev1.ResourceFieldSelector{Resource: "limits.memory"}, "1073741824"},
		{corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, "1024"},
		{corev1.ResourceFieldSelector{Resource: "requests.memory"}, "0"},
	}
	for _, tt := range tests {
		got, err := resourceFieldRef(c, &tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("resourceFieldRef(%s / %s) = %q, %v; want %q", tt.ref.Resource, tt.ref.Divisor.String(), got, err, tt.want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	p := &preparer{opts: &Options{Commands: map[string]string{"gangboost-train": "/repo/bin/gangboost-train"}}}
	for _, cmd := range []string{"gangboost-train", "/usr/local/bin/gangboost-train"} {
		if got, err := p.resolveCommand(cmd); err != nil || got != "/repo/bin/gangboost-train" {
			t.Errorf("resolveCommand(%q) = %q, %v", cmd, got, err)
		}
	}
	if _, err := p.resolveCommand("sh"); err == nil {
		t.Error("resolveCommand(sh) without AllowHostCommands: want error")
	}
	p.opts.AllowHostCommands = true
	if got, err := p.resolveCommand("sh"); err != nil || got == "" {
		t.Errorf("resolveCommand(sh) with AllowHostCommands = %q, %v", got, err)
	}
}

// TestLogTail: a FallbackToLogsOnError message is this run's log only, bounded as the kubelet
// bounds it (80 lines, 2048 bytes).
func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	earlier := "$ runtime\nan earlier run's line\nexit: 1\n$ runtime\n"
	var b strings.Builder
	b.WriteString(earlier)
	for i := range 100 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logTail(path, int64(len(earlier)))
	lines := strings.Split(got, "\n")
	if len(lines) != terminationLogLines || lines[0] != "line 20" || lines[len(lines)-1] != "line 99" {
		t.Errorf("tail has %d lines, %q .. %q; want the last 80 of this run", len(lines), lines[0], lines[len(lines)-1])
	}
	long := strings.Repeat("x", 5000)
	if err := os.WriteFile(path, []byte("$ runtime\n"+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, int64(len("$ runtime\n"))); len(got) != terminationLogBytes {
		t.Errorf("tail of a 5000-byte line is %d bytes, want %d", len(got), terminationLogBytes)
	}
}
