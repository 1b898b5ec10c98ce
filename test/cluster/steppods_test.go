package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
)

// TestLogFollower: a step's lines are passed on as the pod runner writes them, whole lines only
// until the end, without the runner's "$ command" and "exit: N" lines.
func TestLogFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns_pod_main.log")
	var got []string
	f := &logFollower{path: path, out: func(l string) { got = append(got, l) }}
	f.read(false) // not written yet
	write := func(s string) {
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("$ /bin/launch-xgboostjob --executor-input {}\ncreated job\npods bo")
	f.read(false)
	if want := []string{"created job"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	write("und 2/2\nexit: 0 is not the end\nexit: 0\ntail without newline")
	f.read(true)
	want := []string{"created job", "pods bound 2/2", "exit: 0 is not the end", "tail without newline"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{"launch-xgboostjob": "launch-xgboostjob", "Train_Iris 2": "train-iris-2", "--": "step"} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStepPodOnRealNode: with RealNode the step pod is KFP's on a real node: the image's uid and
// the manifests' security context, the pipeline root at its host path, the claim, a /tmp.
func TestStepPodOnRealNode(t *testing.T) {
	c := &localrun.Container{Task: "prepare-data", Image: "ghcr.io/gangboost/gangboost:0.1.0", Argv: []string{"prepare-data", "--executor-input", "{}"},
		Env:    []string{"GANGBOOST_BACKEND=kubernetes", kfp.EnvBinDir + "=/repo/bin", kfp.EnvLocalState + "=/state"},
		Claims: map[string]string{"/mnt/pvc": "gangboost-models"}, PipelineRoot: "/work/run/pipeline-root"}
	fake := (&StepPods{}).pod(c)
	if fake.Spec.NodeSelector != nil || fake.Spec.SecurityContext != nil || len(fake.Spec.Containers[0].Env) != 3 {
		t.Errorf("fake-node pod: node selector %v, security context %+v, env %v; want the pod runner's pod as before", fake.Spec.NodeSelector, fake.Spec.SecurityContext, fake.Spec.Containers[0].Env)
	}
	p := (&StepPods{RealNode: true}).pod(c)
	if p.Spec.NodeSelector[RealNodeLabel] != "true" {
		t.Errorf("node selector %v, want %s=true", p.Spec.NodeSelector, RealNodeLabel)
	}
	if sc := p.Spec.SecurityContext; sc == nil || *sc.RunAsUser != StepUID || !*sc.RunAsNonRoot {
		t.Errorf("pod security context %+v, want non-root uid %d", sc, StepUID)
	}
	main := p.Spec.Containers[0]
	if main.Image != c.Image || main.ImagePullPolicy != corev1.PullIfNotPresent || !*main.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container %+v, want the executor's image, IfNotPresent, a read-only root", main)
	}
	if len(main.Env) != 1 || main.Env[0].Name != "GANGBOOST_BACKEND" {
		t.Errorf("env %v, want only GANGBOOST_BACKEND (no host folders of the runner)", main.Env)
	}
	mounts := map[string]string{}
	for _, m := range main.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	vols := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols[mounts[c.PipelineRoot]]; v.HostPath == nil || v.HostPath.Path != c.PipelineRoot {
		t.Errorf("pipeline root %s mounted from %+v, want the same host path", c.PipelineRoot, v)
	}
	if v := vols[mounts["/mnt/pvc"]]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "gangboost-models" {
		t.Errorf("/mnt/pvc mounted from %+v, want claim gangboost-models", v)
	}
	if v := vols[mounts["/tmp"]]; v.EmptyDir == nil {
		t.Errorf("/tmp mounted from %+v, want an emptyDir beside the read-only root", v)
	}
}
