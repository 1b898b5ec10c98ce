package manifests

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/test/testbin"
)

// fakeKubectlEnv, set to a state folder, makes this test binary answer as kubectl for
// scripts/check-model.sh: a pod it creates runs its container's command line as a local process,
// the claim's mount being the folder state/claims/<claim>.
const fakeKubectlEnv = "GANGBOOST_FAKE_KUBECTL_STATE"

func TestMain(m *testing.M) {
	if state := os.Getenv(fakeKubectlEnv); state != "" {
		os.Exit(fakeKubectl(state, os.Args[1:]))
	}
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// fakeKubectl answers the kubectl calls check-model.sh and deploy-example make; it appends each
// to state/calls. The ClusterServingRuntime's image is state/runtime-image, the program that
// image runs state/entrypoint.
func fakeKubectl(state string, args []string) int {
	log, _ := os.OpenFile(filepath.Join(state, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fmt.Fprintln(log, strings.Join(args, " "))
	log.Close()
	if len(args) > 2 && args[0] == "-n" {
		args = args[2:]
	}
	fail := func(format string, a ...any) int { fmt.Fprintf(os.Stderr, format+"\n", a...); return 1 }
	podDir := func(ref string) string { return filepath.Join(state, "pods", strings.TrimPrefix(ref, "pod/")) }
	switch {
	case len(args) >= 2 && args[0] == "get" && args[1] == "clusterservingruntime":
		image := read(filepath.Join(state, "runtime-image"))
		if image == "" {
			return fail(`Error from server (NotFound): clusterservingruntimes.serving.kserve.io "%s" not found`, args[2])
		}
		fmt.Print(image)
	case len(args) >= 3 && args[0] == "get" && args[1] == "pvc":
		if _, err := os.Stat(filepath.Join(state, "claims", args[2])); err != nil {
			return fail(`Error from server (NotFound): persistentvolumeclaims "%s" not found`, args[2])
		}
	case len(args) >= 2 && args[0] == "get" && strings.HasPrefix(args[1], "pod/"):
		fmt.Print(read(filepath.Join(podDir(args[1]), "phase")))
	case len(args) >= 2 && args[0] == "get" && args[1] == "events":
	case len(args) >= 2 && args[0] == "logs":
		fmt.Print(read(filepath.Join(podDir(args[1]), "logs")))
	case len(args) >= 2 && args[0] == "delete" && strings.HasPrefix(args[1], "pod/"):
		_ = os.WriteFile(filepath.Join(podDir(args[1]), "deleted"), nil, 0o644)
	case args[0] == "create":
		return fakeRunPod(state)
	case args[0] == "apply" || args[0] == "wait":
	default:
		return fail("fake kubectl: unexpected call %q", args)
	}
	return 0
}

// fakeRunPod creates the pod on stdin and runs it to its end: its container's args given to
// state/entrypoint, with the claim's mount path read as the claim's folder.
func fakeRunPod(state string) int {
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 1
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		fmt.Fprintf(os.Stderr, "error: pod manifest: %v\n", err)
		return 1
	}
	name := pod.GenerateName + "x7k2q"
	dir := filepath.Join(state, "pods", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 1
	}
	_ = os.WriteFile(filepath.Join(dir, "pod.yaml"), b, 0o644)
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		len(pod.Spec.Containers[0].VolumeMounts) != 1 {
		fmt.Fprintln(os.Stderr, "fake kubectl runs one container with one claim mounted")
		return 1
	}
	mount := pod.Spec.Containers[0].VolumeMounts[0].MountPath
	claimDir := filepath.Join(state, "claims", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	args := append([]string(nil), pod.Spec.Containers[0].Args...)
	for i, a := range args {
		if a == mount || strings.HasPrefix(a, mount+"/") {
			args[i] = claimDir + strings.TrimPrefix(a, mount)
		}
	}
	out, err := exec.Command(read(filepath.Join(state, "entrypoint")), args...).CombinedOutput()
	phase := "Succeeded"
	if err != nil {
		phase = "Failed"
	}
	_ = os.WriteFile(filepath.Join(dir, "logs"), out, 0o644)
	_ = os.WriteFile(filepath.Join(dir, "phase"), []byte(phase), 0o644)
	fmt.Println("pod/" + name)
	return 0
}

func read(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// make deploy-example first loads the model from the claim in a short-lived pod with the serving
// runtime's own image, and stops before applying the InferenceService when no pipeline run wrote
// the model, saying to run one; the pod mounts the claim read-only, without an Istio sidecar, as
// a restricted namespace admits it.
func TestDeployExampleChecksTheModel(t *testing.T) {
	root := testbin.Root(t)
	runtime := testbin.Built(t, "./runtime/cmd/gangboost-runtime", "CGO_ENABLED=0")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example.com/ml/gangboost-runtime:0.1.0"
	iris := filepath.Join(root, "runtime", "testdata", "models", "iris")
	for _, c := range []struct {
		name                string
		runtimeImage, claim string // "" none
		model               bool   // the pipeline wrote models/iris/v1
		wantOK              bool
		wantOut             string
	}{
		{"model written", image, "gangboost-models", true, true, "model iris: "},
		{"no pipeline run yet", image, "gangboost-models", false, false, "Run the pipeline first"},
		{"claim missing", image, "", false, false, "no claim gangboost-models in namespace team-a: run make deploy-runtime"},
		{"runtime missing", "", "gangboost-models", true, false, "no ClusterServingRuntime gangboost-xgboost to serve the model: run make deploy-runtime first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.WriteFile(filepath.Join(state, "runtime-image"), []byte(c.runtimeImage), 0o644))
			must(os.WriteFile(filepath.Join(state, "entrypoint"), []byte(runtime), 0o644))
			if c.claim != "" {
				must(os.MkdirAll(filepath.Join(state, "claims", c.claim), 0o755))
			}
			if c.model {
				v1 := filepath.Join(state, "claims", "gangboost-models", "models", "iris", "v1")
				must(os.MkdirAll(v1, 0o755))
				for _, f := range []string{"model.json", "metadata.json"} {
					b, err := os.ReadFile(filepath.Join(iris, f))
					must(err)
					must(os.WriteFile(filepath.Join(v1, f), b, 0o644))
				}
			}
			cmd := exec.Command("make", "--no-print-directory", "deploy-example", "NAMESPACE=team-a", "KUBECTL="+self)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), fakeKubectlEnv+"="+state)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if (err == nil) != c.wantOK || !strings.Contains(out.String(), c.wantOut) {
				t.Fatalf("make deploy-example: %v, want success %v and output containing %q:\n%s", err, c.wantOK, c.wantOut, out.String())
			}
			calls := read(filepath.Join(state, "calls"))
			if applied := strings.Contains(calls, "apply -f manifests/inferenceservice.yaml"); applied != c.wantOK {
				t.Errorf("InferenceService applied: %v, want %v; kubectl calls:\n%s", applied, c.wantOK, calls)
			}
			pods, _ := filepath.Glob(filepath.Join(state, "pods", "*"))
			if c.claim == "" || c.runtimeImage == "" {
				if len(pods) != 0 {
					t.Errorf("a check pod was created without a claim or runtime: %v", pods)
				}
				return
			}
			if len(pods) != 1 {
				t.Fatalf("check pods %v, want one", pods)
			}
			if _, err := os.Stat(filepath.Join(pods[0], "deleted")); err != nil {
				t.Error("the check pod was not deleted")
			}
			var pod corev1.Pod
			must(yaml.UnmarshalStrict([]byte(read(filepath.Join(pods[0], "pod.yaml"))), &pod))
			ctr := pod.Spec.Containers[0]
			vol := pod.Spec.Volumes[0].PersistentVolumeClaim
			sc := pod.Spec.SecurityContext
			switch {
			case ctr.Image != image:
				t.Errorf("check pod image %s, want the ClusterServingRuntime's %s", ctr.Image, image)
			case vol.ClaimName != "gangboost-models" || !vol.ReadOnly || !ctr.VolumeMounts[0].ReadOnly:
				t.Errorf("check pod mounts %+v (%+v), want claim gangboost-models read-only", vol, ctr.VolumeMounts[0])
			case pod.Annotations["sidecar.istio.io/inject"] != "false":
				t.Error("check pod would get an Istio sidecar and never complete")
			case pod.Spec.RestartPolicy != corev1.RestartPolicyNever || sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
				ctr.SecurityContext == nil || ctr.SecurityContext.AllowPrivilegeEscalation == nil || *ctr.SecurityContext.AllowPrivilegeEscalation:
				t.Errorf("check pod does not fit the restricted Pod Security Standard: %+v %+v", sc, ctr.SecurityContext)
			}
		})
	}
}
