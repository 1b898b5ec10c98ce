// Package repo checks the repository itself: what is tracked is source, never a build output.
package repo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/test/testbin"
)

// maxTracked is the largest file the repository may track: the biggest source files are test
// fixtures of a few hundred KB, a built binary is tens of MB.
const maxTracked = 5 << 20

// TestNoBuildOutputsTracked fails on any tracked executable (ELF) or file over maxTracked, the
// shape a binary built with `go build` at the root takes (one of 97 MB was once committed and
// carried into every image build by the Containerfile's COPY).
func TestNoBuildOutputsTracked(t *testing.T) {
	root := testbin.Root(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing tracked to check", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d files; expected the repository", len(files))
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		if info.Size() > maxTracked {
			t.Errorf("%s is tracked and %d bytes (over %d): a build output? git rm --cached it and cover it in .gitignore", f, info.Size(), maxTracked)
			continue
		}
		head := make([]byte, 4)
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := fh.Read(head)
		fh.Close()
		if bytes.Equal(head[:n], []byte("\x7fELF")) {
			t.Errorf("%s is a tracked ELF binary: git rm --cached it and cover it in .gitignore", f)
		}
	}
}

// TestIgnoresRootBinaries: the binaries `go build ./components/<name>` leaves at the root are
// ignored, so `git add .` cannot track them again.
func TestIgnoresRootBinaries(t *testing.T) {
	for _, name := range []string{"deploy-inferenceservice", "launch-xgboostjob", "prepare-data", "evaluate", "gangboost", "gangboost-train", "xgboost-trainer", "gangboost-runtime", "bin/x", "dist/x"} {
		cmd := exec.Command("git", "check-ignore", "-q", name)
		cmd.Dir = testbin.Root(t)
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Skipf("git check-ignore: %v", err)
			}
			t.Errorf("%s at the repository root is not ignored by .gitignore", name)
		}
	}
}

// TestProductNeverImportsTest: no package outside test/ depends on one inside it, so what ships is
// built from product code alone and tests can depend on product code without a cycle.
func TestProductNeverImportsTest(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = testbin.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/gangboost/gangboost/"
	isTest := func(p string) bool { return strings.HasPrefix(p, module+"test/") }
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) || isTest(fields[0]) {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if isTest(imp) {
				t.Errorf("product package %s imports %s", fields[0], imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d product packages; expected the module's", checked)
	}
}
