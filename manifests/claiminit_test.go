package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/steps/stepcmd"
)

// claim-init.yaml is a Job the API server takes as it is (strict), running the gangboost image
// of this VERSION as root on the claim pvc.yaml creates, without Istio's sidecar, with a command
// line the binary accepts.
func TestClaimInitJob(t *testing.T) {
	b, err := os.ReadFile("claim-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if strict, err := sigsjson.UnmarshalStrict(js, &job, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
		t.Fatalf("not a Job: %v %v", err, strict)
	}
	version, _ := os.ReadFile("../VERSION")
	pod := job.Spec.Template
	c := pod.Spec.Containers[0]
	if c.Image != "ghcr.io/gangboost/gangboost:"+strings.TrimSpace(string(version)) || pod.Labels["sidecar.istio.io/inject"] != "false" ||
		pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.RunAsUser == nil || *pod.Spec.SecurityContext.RunAsUser != 0 {
		t.Errorf("pod template %+v: want the gangboost image of this VERSION, as root, without Istio's sidecar", pod)
	}
	pvc, _ := os.ReadFile("pvc.yaml")
	if claim := pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; !strings.Contains(string(pvc), "name: "+claim) {
		t.Errorf("the Job mounts claim %s, which pvc.yaml does not create", claim)
	}
	if len(c.Command) < 2 || c.Command[0] != "/usr/local/bin/"+stepcmd.Name || c.Command[1] != "claim-init" {
		t.Fatalf("command %v: want %s claim-init", c.Command, stepcmd.Name)
	}
	if os.Geteuid() != 0 {
		return
	}
	// The Job's own arguments, on a folder standing for the claim.
	root := t.TempDir()
	args := slices.Clone(c.Command[2:])
	args[slices.Index(args, "--claim")+1] = root
	if code := stepcmd.Tools["claim-init"](args); code != 0 {
		t.Fatalf("claim-init %v: exit %d", args, code)
	}
	for _, d := range []string{"datasets", "models", "checkpoints", "serving"} {
		if st, err := os.Stat(filepath.Join(root, d)); err != nil || st.Sys() == nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
