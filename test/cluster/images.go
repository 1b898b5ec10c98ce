package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
)

// Images are the OCI archives of gangboost's images (what make images writes to dist/), built
// from the binaries under test for the real node, which imports them (Cluster.ImportImage): there
// is no registry.
type Images struct {
	// Dir holds <name>-<Version>.tar for each image.
	Dir     string
	Version string
	// Took is how long the build took.
	Took time.Duration
}

// Archive is the archive of image name (gangboost, gangboost-runtime).
func (im *Images) Archive(name string) string {
	return filepath.Join(im.Dir, name+"-"+im.Version+".tar")
}

// BuildImages runs scripts/build-images.sh (as make images does) on the binaries of make build
// (repodir.BinDir) into dir/dist, on a buildah store of its own under dir that it removes
// afterwards, so the images hold exactly the binaries under test. It needs root and buildah,
// which the real node needs too.
func BuildImages(ctx context.Context, dir string) (*Images, error) {
	root, err := repodir.Root()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return nil, err
	}
	im := &Images{Dir: filepath.Join(dir, "dist"), Version: strings.TrimSpace(string(b))}
	if os.Geteuid() != 0 {
		return nil, errors.New("the images are built only where the real node runs (root)")
	}
	bin, err := repodir.BinDir()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"gangboost-runtime", "gangboost-train", "gangboost-components"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("%s missing in %s: run make build", name, bin)
		}
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		return nil, errors.New("buildah not found: apt-get install -y buildah (scripts/build-images.sh builds with it)")
	}
	store := filepath.Join(dir, "store")
	storeFlags := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run")}
	defer func() {
		_ = exec.Command("buildah", append(storeFlags, "rmi", "--all", "--force")...).Run()
		_ = os.RemoveAll(store)
	}()
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "build-images.sh"))
	cmd.Env = append(os.Environ(), "BUILDAH_STORAGE="+strings.Join(storeFlags, " "), "DIST="+im.Dir, "GANGBOOST_BIN_DIR="+bin, "VERSION="+im.Version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("scripts/build-images.sh: %w\n%s", err, out)
	}
	im.Took = time.Since(t0)
	return im, nil
}
