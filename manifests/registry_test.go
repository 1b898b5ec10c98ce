package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/version"
)

// renderedImages are the image references of a rendering, in order.
var renderedImages = regexp.MustCompile(`(?m)^\s*image:\s*(\S+)\s*$`)

// withRegistry runs scripts/with-registry.sh (what make deploy-runtime pipes into kubectl
// apply) with registry, through kubectl's built-in kustomize.
func withRegistry(t *testing.T, registry string) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl (its built-in kustomize renders the manifests) is not installed")
	}
	cmd := exec.Command(filepath.Join("..", "scripts", "with-registry.sh"), registry)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/with-registry.sh %s: %v", registry, err)
	}
	return string(out)
}

// make deploy-runtime REGISTRY=R serves from R: the kustomize rendering of manifests/ names R for
// every image, and with the default registry it is the committed manifests' images.
func TestDeployRuntimeRepointsEveryImage(t *testing.T) {
	committed, err := os.ReadFile("clusterservingruntime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := len(renderedImages.FindAllString(string(committed), -1))
	if want == 0 {
		t.Fatal("clusterservingruntime.yaml names no image; the pattern no longer matches it")
	}
	for _, registry := range []string{version.DefaultRegistry, "example.com/ml", "localhost:5000/team/ml"} {
		out := withRegistry(t, registry)
		imgs := renderedImages.FindAllStringSubmatch(out, -1)
		if len(imgs) != want {
			t.Errorf("REGISTRY=%s: %d images rendered, clusterservingruntime.yaml has %d:\n%s", registry, len(imgs), want, out)
		}
		for _, m := range imgs {
			if m[1] != version.ImageIn(registry, "gangboost-runtime") {
				t.Errorf("REGISTRY=%s: image %s, want %s", registry, m[1], version.ImageIn(registry, "gangboost-runtime"))
			}
		}
		if registry != version.DefaultRegistry && strings.Contains(out, version.DefaultRegistry) {
			t.Errorf("REGISTRY=%s: the rendering still names %s", registry, version.DefaultRegistry)
		}
		for _, kind := range []string{"kind: PersistentVolumeClaim", "kind: ClusterServingRuntime"} {
			if !strings.Contains(out, kind) {
				t.Errorf("REGISTRY=%s: the rendering has no %s", registry, kind)
			}
		}
	}
}

// make deploy-runtime applies the rendering and rbac/: what it applied before, one file each.
func TestDeployRuntimeRendersTheKustomization(t *testing.T) {
	out := makeDryRun(t, "deploy-runtime", "REGISTRY=example.com/ml", "KUBECTL=kubectl")
	if !strings.Contains(out, "scripts/with-registry.sh example.com/ml | kubectl apply -n gangboost -f -") {
		t.Errorf("make deploy-runtime REGISTRY=example.com/ml does not apply the rendering in that registry:\n%s", out)
	}
}
