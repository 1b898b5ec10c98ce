package podrunner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWithMounts runs a command the way exec does with Options.MountVolumes: in its own mount
// namespace it sees each volume's folder at the mount path, parents mounted before children,
// read-only where asked, and the host sees none of it.
func TestWithMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	vol, sub, ro := t.TempDir(), t.TempDir(), t.TempDir()
	for dir, text := range map[string]string{vol: "claim", sub: "models", ro: "token"} {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(t.TempDir(), "mnt", "pvc")
	mounts := []mount{
		{path: target + "/models", local: sub},
		{path: target, local: vol},
		{path: target + "-ro", local: ro, readOnly: true},
	}
	argv := withMounts(mounts, []string{"/bin/sh", "-c",
		`cat "$1/f" "$1/models/f" "$1-ro/f" && if touch "$1-ro/new" 2>/dev/null; then echo writable; else echo " read-only"; fi`, "sh", target})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "claimmodelstoken read-only" {
		t.Errorf("container saw %q, want the three volumes, the last read-only", got)
	}
	// The host keeps only the (empty) mountpoint.
	if entries, err := os.ReadDir(target); err != nil || len(entries) != 0 {
		t.Errorf("host's %s: %v %v, want an empty mountpoint", target, entries, err)
	}
}
