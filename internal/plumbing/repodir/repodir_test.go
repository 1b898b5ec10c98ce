package repodir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootIsTheCheckoutAboveTheWorkingDirectory(t *testing.T) {
	t.Setenv(EnvRepo, "")
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("../../..")
	if root != want {
		t.Errorf("Root() = %s, want %s", root, want)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "plumbing", "repodir")); err != nil {
		t.Errorf("Root() = %s, which does not hold this package: %v", root, err)
	}
}

func TestRootFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvRepo, dir)
	if root, err := Root(); err != nil || root != dir {
		t.Errorf("Root() = %s, %v; want %s", root, err, dir)
	}
}

func TestRootOutsideACheckoutSaysWhatToSet(t *testing.T) {
	t.Setenv(EnvRepo, "")
	t.Chdir(t.TempDir())
	// The test binary lives in a temporary build folder, outside the checkout.
	if root, err := Root(); err == nil {
		t.Skipf("this test binary runs from inside a checkout (%s)", root)
	} else if !strings.Contains(err.Error(), EnvRepo) {
		t.Errorf("error %q does not name %s", err, EnvRepo)
	}
}

func TestBinDir(t *testing.T) {
	t.Setenv(EnvRepo, "")
	t.Setenv(EnvBinDir, "")
	got, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("../../../bin")
	if got != want {
		t.Errorf("BinDir() without %s = %s, want <repo>/bin %s", EnvBinDir, got, want)
	}
	dir := t.TempDir()
	t.Setenv(EnvBinDir, dir)
	if got, err := BinDir(); err != nil || got != dir {
		t.Errorf("BinDir() with %s=%s = %s, %v", EnvBinDir, dir, got, err)
	}
}
