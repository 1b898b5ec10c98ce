package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/cluster"
)

// images holds the OCI archives scripts/build-images.sh wrote for this run (what make images
// writes to dist/), from the binaries of make build; imagesErr says why there are none.
var (
	images       string
	imagesErr    error
	imageVersion string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gangboost-realnode-images-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	images, imagesErr = buildImages(dir)

	before := cluster.HostBaseline()
	code := cluster.Run(m, cluster.Options{RealNode: true, Nodes: []cluster.NodeSpec{{Name: "fake-node", CPU: "8", Memory: "32Gi"}}})
	// Stop has run: whatever the real node added to the host must be gone.
	if left := before.Added(cluster.SnapshotHost()); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the real node left on the host after Stop:\n  %s\n", strings.Join(left, "\n  "))
		code = 1
	}
	return code
}

// buildImages runs scripts/build-images.sh (as make images does) into dir/dist, on a buildah
// store of its own that it removes, so the images are those of the binaries under test.
func buildImages(dir string) (string, error) {
	root, err := repodir.Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	imageVersion = strings.TrimSpace(string(b))
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("the images are built only where the real node runs (root)")
	}
	bin, err := repodir.BinDir()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(bin, "gangboost-runtime")); err != nil {
		return "", fmt.Errorf("gangboost-runtime missing in %s: run make build", bin)
	}
	store := filepath.Join(dir, "store")
	flags := "--root " + filepath.Join(store, "root") + " --runroot " + filepath.Join(store, "run")
	defer exec.Command("buildah", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "rmi", "--all", "--force").Run()
	cmd := exec.Command(filepath.Join(root, "scripts", "build-images.sh"))
	cmd.Env = append(os.Environ(), "BUILDAH_STORAGE="+flags, "DIST="+filepath.Join(dir, "dist"), "GANGBOOST_BIN_DIR="+bin, "VERSION="+imageVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/build-images.sh: %w\n%s", err, out)
	}
	return filepath.Join(dir, "dist"), nil
}

// requireImage is the archive of a gangboost image built for this run.
func requireImage(t *testing.T, name string) string {
	t.Helper()
	if imagesErr != nil {
		t.Fatalf("images: %v", imagesErr)
	}
	return filepath.Join(images, name+"-"+imageVersion+".tar")
}
