package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gangboost/gangboost/internal/plumbing/ci"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/stepcmd"
)

// WaitFor polls cond every 100 ms until it is true, and fails t naming desc and cond's last
// error when timeout passes first. An error from cond is kept as the reason and polling goes on:
// objects a controller has yet to create are the normal case while waiting. An error wrapped by
// Abort instead fails t at once: something that must never happen while waiting did.
func WaitFor(t testing.TB, timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := poll(timeout, desc, cond); err != nil {
		t.Fatal(err)
	}
}

// Abort marks err as a failure that ends WaitFor at once, rather than a reason to keep polling.
func Abort(err error) error { return abortError{err} }

type abortError struct{ err error }

func (e abortError) Error() string { return e.err.Error() }
func (e abortError) Unwrap() error { return e.err }

// poll is WaitFor's loop: nil once cond holds, else the error WaitFor fails with.
func poll(timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if errors.As(err, new(abortError)) {
			return false, err
		}
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	switch {
	case errors.As(err, new(abortError)):
		return fmt.Errorf("while waiting for %s: %w", desc, err)
	case err != nil:
		return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, desc, last)
	}
	return nil
}

// LocalPVC creates, in namespace, a hostPath PersistentVolume named <namespace>-<claim> on a
// temporary folder and the claim bound to it (static binding by the controller-manager's PV
// controller): the local stand-in for the cluster's storage. It returns the folder, which holds
// what pods see at the claim's mount path.
func (c *Cluster) LocalPVC(t testing.TB, namespace, claim string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pvc")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.BindLocalPVC(ctx, namespace, claim, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BindLocalPVC is LocalPVC on a given folder: it creates the folder, the hostPath
// PersistentVolume <namespace>-<claim> on it and the claim, and waits until the claim is Bound.
func (c *Cluster) BindLocalPVC(ctx context.Context, namespace, claim, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	size := resource.MustParse("1Gi")
	pvName := namespace + "-" + claim
	hostPathType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPathType}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
		},
	}
	if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PV %s: %w", pvName, err)
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:       pvName,
			StorageClassName: &empty,
		},
	}
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PVC %s: %w", claim, err)
	}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		return fmt.Errorf("PVC %s/%s not Bound: %w", namespace, claim, err)
	}
	return nil
}

// PodMounts says why the pod runner's containers do not get their volumes at their mount paths
// (podrunner.MountNamespaces, probed once when the runner starts); nil when they do.
func (c *Cluster) PodMounts() error { return c.mountsErr }

// RequirePodMounts is for a test whose pods need their volumes at their mount paths (a component
// that reads its service-account token or its claim at a fixed path, as in a real pod), which
// needs mount namespaces (root). Without them it skips, or fails in CI (CI=1 or CI=true), where `make
// test` runs as root.
func (c *Cluster) RequirePodMounts(t testing.TB) {
	t.Helper()
	if c.PodMounts() == nil {
		return
	}
	if ci.Running() {
		t.Fatalf("pods cannot get their volumes at their mount paths here: %v", c.mountsErr)
	}
	t.Skipf("pods cannot get their volumes at their mount paths here (CI=1 or CI=true would fail): %v", c.mountsErr)
}

// GangboostCommands maps each of gangboost's binaries named (gangboost-train, launch-xgboostjob, ...) to
// its file in the folder `make build` puts them in (repodir.BinDir): the pod runner's
// Options.Commands for pods of gangboost's images. It panics outside a checkout with
// $GANGBOOST_BIN_DIR unset, where the test cluster's own tools cannot be found either.
func GangboostCommands(names ...string) map[string]string {
	dir, err := repodir.BinDir()
	if err != nil {
		panic("cluster.GangboostCommands: " + err.Error())
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = filepath.Join(dir, n)
	}
	return m
}

// ComponentCommands are the pipeline components' commands (the links `make build` puts beside
// gangboost-components), for GangboostCommands: every step pod of the pipeline runs one.
func ComponentCommands() []string { return stepcmd.Names() }

// TwoGPUNodes are two nodes of 8 CPUs, 32Gi and one nvidia.com/gpu each, as in Volcano's GPU gang
// demo: a gang asking two GPUs spans both, one asking more cannot fit.
func TwoGPUNodes() []NodeSpec {
	return []NodeSpec{
		{Name: "gpu-node-1", CPU: "8", Memory: "32Gi", GPUs: 1},
		{Name: "gpu-node-2", CPU: "8", Memory: "32Gi", GPUs: 1},
	}
}
