// Package testbin gives tests the gangboost checkout and its programs: the binaries `make build`
// puts in the bin folder, and the ones a test builds itself from the module's packages.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
)

// Root is the checkout (repodir.Root), failing t when there is none.
func Root(t testing.TB) string {
	t.Helper()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Dir is the folder of the binaries `make build` puts out: $GANGBOOST_BIN_DIR, else <repo>/bin
// (repodir.BinDir).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := repodir.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Installed is the binary name in Dir, failing t with the command that builds it when it is not
// there.
func Installed(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found (run `make build`, or set %s): %v", p, repodir.EnvBinDir, err)
	}
	return p
}

// built are the binaries this test process built, by package and environment.
var built struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*build
}

type build struct {
	n    int // its folder's name
	once sync.Once
	path string
	err  error
}

// Build builds the module's package pkg ("./components/xgboost-trainer": a path from the
// checkout's root) with env added to the environment (CGO_ENABLED=0, say), once per test process,
// and returns the executable, named after the package. Remove deletes what Build built.
func Build(pkg string, env ...string) (string, error) {
	key := pkg + "\x00" + strings.Join(env, "\x00")
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*build{}
	}
	b := built.bins[key]
	if b == nil {
		b = &build{n: len(built.bins)}
		built.bins[key] = b
	}
	built.mu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg, env, b.n) })
	return b.path, b.err
}

func goBuild(pkg string, env []string, n int) (string, error) {
	root, err := repodir.Root()
	if err != nil {
		return "", err
	}
	built.mu.Lock()
	if built.dir == "" {
		built.dir, err = os.MkdirTemp("", "gangboost-testbin-")
	}
	dir := built.dir
	built.mu.Unlock()
	if err != nil {
		return "", err
	}
	// One folder per build: two builds of a package (other env) keep the package's name.
	out := filepath.Join(dir, fmt.Sprint(n), path.Base(pkg))
	// -trimpath, as make build's: the packages make build compiled are reused.
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s: %v\n%s", strings.Join(env, " "), pkg, err, msg)
	}
	return out, nil
}

// Built is Build, failing t when the build fails.
func Built(t testing.TB, pkg string, env ...string) string {
	t.Helper()
	p, err := Build(pkg, env...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Remove deletes the binaries Build built; a TestMain calls it after m.Run.
func Remove() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
		built.dir, built.bins = "", nil
	}
}

// Main runs the tests and removes the binaries they built: a package's TestMain when it needs
// nothing else.
func Main(m *testing.M) {
	code := m.Run()
	Remove()
	os.Exit(code)
}
