package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/components"
	gbversion "github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/pipelines"
)

// otherRegistry is where the tests move gangboost's images.
const otherRegistry = "example.com/ml"

// defaultRef is a mention of one of gangboost's images in the default registry.
var defaultRef = regexp.MustCompile(regexp.QuoteMeta(gbversion.DefaultRegistry) + `/gangboost(?:-runtime)?\b`)

// settingLine is a line that states the default of the registry setting itself (a Makefile or
// shell variable, a build argument, the Go default, the image an images transformer or
// `kustomize edit set image` replaces):
// the one place each mechanism reads, not a reference it has to move.
var settingLine = regexp.MustCompile(`REGISTRY|DefaultRegistry = |name: ` + regexp.QuoteMeta(gbversion.DefaultRegistry) + `/gangboost|` +
	regexp.QuoteMeta(gbversion.DefaultRegistry) + `/gangboost(?:-runtime)?=`) // kustomize edit set image OLD=NEW

// references lists, per tracked file, the lines that name an image in the default registry
// other than the setting's own default; tests and their data are left out.
func references(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v: the walk needs a git checkout", err)
	}
	refs := map[string][]string{}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/testdata/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		for _, line := range strings.Split(string(b), "\n") {
			if defaultRef.MatchString(line) && !settingLine.MatchString(line) {
				refs[f] = append(refs[f], strings.TrimSpace(line))
			}
		}
	}
	return refs
}

// Every image reference of the repository moves with the one setting, REGISTRY: the component
// specs and the package by gangboost pipeline compile --registry, the manifests by their
// kustomization's images transformer; nothing else names ghcr.io/gangboost but the setting's
// defaults. After the move no reference to the default registry remains and each moved
// reference names otherRegistry.
func TestRegistryRepointsEveryImageReference(t *testing.T) {
	refs := references(t)
	if len(refs) == 0 {
		t.Fatal("no image reference found; the pattern no longer matches the repository")
	}
	moved := map[string]string{} // file -> what it becomes in otherRegistry
	for _, name := range components.Names() {
		b, err := components.YAMLIn(name, otherRegistry)
		if err != nil {
			t.Fatal(err)
		}
		moved["components/"+name+"/component.yaml"] = string(b)
	}
	o := pipelines.DefaultOptions()
	o.Registry = otherRegistry
	pkg, err := pipelines.Compile(o)
	if err != nil {
		t.Fatal(err)
	}
	moved[pipelines.File] = string(pkg)
	for _, dir := range []string{"manifests", "manifests/contention", "manifests/trainer", "manifests/kserve", "manifests/claim-init"} {
		rendered := withRegistry(t, dir)
		for _, f := range kustomizationResources(t, dir) {
			moved[f] = rendered
		}
	}

	var files []string
	for f := range refs {
		files = append(files, f)
	}
	sort.Strings(files)
	total := 0
	for _, f := range files {
		total += len(refs[f])
		text, ok := moved[f]
		if !ok {
			t.Errorf("%s names the default registry, and no registry setting moves it:\n  %s\n"+
				"derive it from REGISTRY (see README \"Your registry\") or write ${REGISTRY:-%s}", f, strings.Join(refs[f], "\n  "), gbversion.DefaultRegistry)
			continue
		}
		if m := defaultRef.FindString(text); m != "" {
			t.Errorf("%s with REGISTRY=%s still names %s", f, otherRegistry, m)
		}
		if n := strings.Count(text, otherRegistry+"/gangboost"); n == 0 {
			t.Errorf("%s with REGISTRY=%s names no image in it", f, otherRegistry)
		}
	}
	t.Logf("%d references to %s in %d files: %s", total, gbversion.DefaultRegistry, len(files), strings.Join(files, ", "))
}

// withRegistry renders dir's kustomization with every image in otherRegistry, as make
// deploy-runtime REGISTRY=... does.
func withRegistry(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl (its built-in kustomize renders the manifests) is not installed")
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "with-registry.sh"), otherRegistry, dir).Output()
	if err != nil {
		t.Fatalf("scripts/with-registry.sh %s %s: %v", otherRegistry, dir, err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*image:\s*(\S+)`).FindAllStringSubmatch(string(out), -1) {
		if strings.Contains(m[1], "gangboost") && !strings.HasPrefix(m[1], otherRegistry+"/") {
			t.Errorf("%s rendered with REGISTRY=%s: image %s", dir, otherRegistry, m[1])
		}
	}
	return string(out)
}

// kustomizationResources are the files dir/kustomization.yaml lists, relative to the root.
func kustomizationResources(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, m := range regexp.MustCompile(`(?m)^\s*-\s*(\S+\.yaml)\s*$`).FindAllStringSubmatch(string(b), -1) {
		files = append(files, dir+"/"+m[1])
	}
	return files
}

// make build REGISTRY=R links R into the binaries: launch-xgboostjob's default trainer image and
// gangboost pipeline compile's default --registry (package and component specs) follow it.
func TestBuildRegistryIsTheBinariesDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("links two binaries")
	}
	dir := t.TempDir()
	ldflags := "-X github.com/gangboost/gangboost/internal/contract/version.Registry=" + otherRegistry
	for _, pkg := range []string{"./cmd/gangboost", "./cmd/gangboost-components"} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", dir, pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// The flag's default is what a job gets when the image input is not set.
	help, _ := exec.Command(filepath.Join(dir, "gangboost-components"), "launch-xgboostjob", "-h").CombinedOutput()
	want := `"` + gbversion.ImageIn(otherRegistry, "gangboost") + `"`
	if !strings.Contains(string(help), want) {
		t.Errorf("launch-xgboostjob built with REGISTRY=%s: its default trainer image is not %s:\n%s", otherRegistry, want, help)
	}
	specs := filepath.Join(dir, "components")
	pkg, err := exec.Command(filepath.Join(dir, "gangboost"), "pipeline", "compile", "--components-dir", specs).Output()
	if err != nil {
		t.Fatalf("gangboost pipeline compile: %v", err)
	}
	texts := map[string]string{"package": string(pkg)}
	for _, name := range components.Names() {
		b, err := os.ReadFile(filepath.Join(specs, name, "component.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	for what, text := range texts {
		if m := defaultRef.FindString(text); m != "" || !strings.Contains(text, otherRegistry+"/gangboost:") {
			t.Errorf("%s compiled by a gangboost built with REGISTRY=%s: names %q, want only %s images", what, otherRegistry, m, otherRegistry)
		}
	}
}
