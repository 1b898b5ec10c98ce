package images

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	gbversion "github.com/gangboost/gangboost/internal/contract/version"
)

// imageRef is a reference to one of gangboost's own images.
// Container files state the version in a label too.
var imageRef = regexp.MustCompile(`(?:ghcr\.io/gangboost/(?:gangboost(?:-runtime)?):|org\.opencontainers\.image\.version=)([A-Za-z0-9._-]+)`)

// Every reference to gangboost's images in manifests, component specs and pipeline packages,
// and the version the runtime reports, is the version in VERSION: one place to change.
func TestImageReferencesCarryTheVersion(t *testing.T) {
	// runtime/service.Version is internal/contract/version's.
	if gbversion.Version != version || gbversion.Registry != registry {
		t.Errorf("internal/contract/version says %s at %s; VERSION is %s at %s", gbversion.Version, gbversion.Registry, version, registry)
	}
	var files []string
	for _, pattern := range []string{"manifests/*.yaml", "manifests/*/*.yaml", "components/*/component.yaml", "pipelines/*.yaml", "runtime/Dockerfile", "components/Containerfile"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		files = append(files, m...)
	}
	refs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imageRef.FindAllStringSubmatch(string(b), -1) {
			refs++
			if m[1] != version {
				t.Errorf("%s: %s has version %s; VERSION is %s", f, m[0], m[1], version)
			}
		}
	}
	if refs == 0 {
		t.Fatal("no image references found; the patterns no longer match the repository")
	}
}
