package notebooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
	"github.com/gangboost/gangboost/test/nbrun"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestMain starts the test control plane (two nodes with one GPU each, Volcano, the Training
// Operator with --gang-scheduler-name=volcano, pods run as local processes) for the
// gang-scheduling walk-through; predict.ipynb does not use it.
func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		PodRunner: &podrunner.Options{
			Commands: func() map[string]string {
				m := cluster.GangboostCommands("gangboost-train")
				m["sleep"] = "/bin/sleep" // the blocker pod's busybox command
				return m
			}(),
			PassEnv: []string{"LD_LIBRARY_PATH"},
		},
	})
}

// TestGangSchedulingNotebook runs notebooks/gang-scheduling.ipynb with kubectl against the
// control plane: the blocker pod holds a GPU, the XGBoostJob's gang stays unbound with the
// PodGroup's Unschedulable reason, and once the blocker goes both pods are bound together and
// the job trains. The notebook's own asserts check each step; the test reads what its cells
// showed (their outputs, never their source, which holds the same words).
func TestGangSchedulingNotebook(t *testing.T) {
	nbrun.Require(t)
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl not found: %v", err)
	}
	c := cluster.Require(t)
	const ns = "gangboost"
	ctx := context.Background()
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pvc := c.LocalPVC(t, ns, "gangboost-models")

	out := filepath.Join(t.TempDir(), "gang-scheduling.executed.ipynb")
	if keep := os.Getenv("GANGBOOST_KEEP_NOTEBOOKS"); keep != "" {
		out = filepath.Join(keep, "gang-scheduling.executed.ipynb")
	}
	cmd := nbrun.Command(filepath.Join(testbin.Root(t), "notebooks", "gang-scheduling.ipynb"), out, filepath.Join(testbin.Root(t), "notebooks"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "NAMESPACE="+ns,
		"GANGBOOST_MANIFESTS="+contentionManifests(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		// The error's own line first: the logs after it run to thousands of lines.
		t.Fatalf("notebook failed (%v): %s\n%s\ncontrol plane logs:\n%s", err, nbrun.LastLine(b), b, c.LogTails(40))
	}
	shown := nbrun.OutputsText(t, out)
	for _, want := range []string{"Unschedulable=True", "is bound: the free GPU stays free", "pods bound", "Succeeded",
		"2 of 2 pods of the gang exist, 0 bound", "all 2 pods bound"} {
		if !strings.Contains(shown, want) {
			t.Errorf("executed notebook's outputs lack %q:\n%s", want, shown)
		}
	}
	// The job's rank 0 wrote the model where the manifest says, on the claim.
	if _, err := os.Stat(filepath.Join(pvc, "models", "iris-gang", "v1", "metadata.json")); err != nil {
		t.Errorf("no model from the gang on the claim: %v", err)
	}
}

// contentionManifests is a folder holding a copy of manifests/contention, as the notebook reads
// it from $GANGBOOST_MANIFESTS, with the job's Master port (9999) changed to a free one. The
// pods run as processes on this machine, beside the other test planes' (the serving tier's
// pipeline gang listens on 9999 too), where on a cluster each pod has an address of its own.
func contentionManifests(t *testing.T) string {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(testbin.Root(t), "manifests", "contention")
	dst := filepath.Join(t.TempDir(), "manifests")
	if err := os.MkdirAll(filepath.Join(dst, "contention"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	const masterPort = "containerPort: 9999"
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "xgboostjob-iris-gang.yaml" {
			if !strings.Contains(string(b), masterPort) {
				t.Fatalf("%s has no %q to change", e.Name(), masterPort)
			}
			b = []byte(strings.ReplaceAll(string(b), masterPort, "containerPort: "+strconv.Itoa(port)))
		}
		if err := os.WriteFile(filepath.Join(dst, "contention", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
