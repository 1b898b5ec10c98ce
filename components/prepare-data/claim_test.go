package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/test/testbin"
)

// A claim whose root is root:root 755, as an NFS export hands it out: prepare-data, as the
// image's user 65532, fails at once naming the folder, its owner and mode and the fix; after
// claim-init (as root) the same step writes the data set, as 65532.
func TestRootOwnedClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the step as uid 65532 and claim-init as root: needs root (as in CI)")
	}
	bin := testbin.Dir(t)
	work, err := os.MkdirTemp("", "gangboost-claim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	root := filepath.Join(work, "claim")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// The step's own output files (KFP's) are written where its user may.
	for _, d := range []string{work} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	step := func() (string, error) {
		out, err := os.MkdirTemp(work, "outputs-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(out, 0o777)
		in := kfptest.ExecutorInput(t, prepare.Component(image), map[string]any{"pvc_mount_path": root}, out)
		cmd := exec.Command(filepath.Join(bin, "prepare-data"), "--executor-input", string(in))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: claim.ImageUID, Gid: claim.ImageGID}}
		cmd.Dir = work
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	out, err := step()
	for _, want := range []string{root + " is owned by 0:0 with mode -rwxr-xr-x", "runs as 65532:65532", "manifests/claim-init.yaml", "claim-init --claim"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("prepare-data on a root-owned claim: %v\n%s\nwant it to say %q", err, out, want)
		}
	}
	init := exec.Command(filepath.Join(bin, "gangboost-components"), "claim-init", "--claim", root)
	if b, err := init.CombinedOutput(); err != nil {
		t.Fatalf("claim-init: %v\n%s", err, b)
	}
	if out, err := step(); err != nil {
		t.Fatalf("prepare-data after claim-init: %v\n%s", err, out)
	}
	st, err := os.Stat(filepath.Join(root, "datasets", "iris", "train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != claim.ImageUID {
		t.Errorf("train.csv belongs to uid %d, want the step's 65532", sys.Uid)
	}
	if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("claim-init changed the claim's root: %v %v", st.Mode(), err)
	}
}
