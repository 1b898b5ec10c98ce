package images

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// maxGangboostArchive bounds the gangboost image's OCI archive, which every step and trainer pod
// pulls: 20 MB with the components as one binary, 83 MB when each was its own; 31.8 MB since
// deploy-inferenceservice carries a gRPC client (its ModelReady check of grpc-v2 services); 34.1 MB
// on Debian 13's libxgboost 3.0 (its .deb 2.1 MB against 1.7.4's 1.4 MB, trixie's libc and
// libstdc++ 0.2 MB more) with the components' object-store and model-registry clients.
const maxGangboostArchive = 35 << 20

// The gangboost image carries the components once: its archive stays under maxGangboostArchive,
// and every component.yaml's command is a link to gangboost-components.
func TestGangboostImageCarriesTheComponentsOnce(t *testing.T) {
	requireImages(t)
	fi, err := os.Stat(filepath.Join(store, "dist", "gangboost-"+version+".tar"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gangboost archive: %d bytes", fi.Size())
	if fi.Size() > maxGangboostArchive {
		t.Errorf("the gangboost image's archive is %d bytes, over %d: what in bin/ grew? (go version -m, go list -deps)", fi.Size(), maxGangboostArchive)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := podman(ctx, "image", "mount", image("gangboost")).Output()
	if err != nil {
		t.Fatalf("podman image mount: %v", err)
	}
	defer podman(context.Background(), "image", "unmount", image("gangboost")).Run()
	bin := filepath.Join(strings.TrimSpace(string(out)), "usr", "local", "bin")
	specs, _ := filepath.Glob(filepath.Join(root, "components", "*", "component.yaml"))
	for _, spec := range specs {
		cmd, _ := componentCommand(t, spec)
		if target, err := os.Readlink(filepath.Join(bin, filepath.Base(cmd))); err != nil || target != "gangboost-components" {
			t.Errorf("%s in the image: link to %q (%v), want gangboost-components", cmd, target, err)
		}
	}
}
