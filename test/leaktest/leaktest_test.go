package leaktest

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
)

// The check finds a process deliberately left running with the mark in its environment, and one
// with it only on its command line, in a process group of their own as a runaway helper would be;
// once they are gone it finds nothing, and another run's mark finds neither.
func TestProcessesFindsALeakedProcess(t *testing.T) {
	m := New()
	if got := m.Processes(); len(got) != 0 {
		t.Fatalf("a new mark is carried by %v", got)
	}
	start := func(cmd *exec.Cmd) *procgroup.Process {
		t.Helper()
		p, err := procgroup.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Signal(syscall.SIGKILL); <-p.Done() })
		return p
	}
	byEnvCmd := exec.Command("sleep", "60")
	byEnvCmd.Env = append(os.Environ(), m.Env())
	byEnv := start(byEnvCmd)
	byArg := start(exec.Command("sh", "-c", "sleep 60; : "+string(m)))

	var pids []int
	for _, p := range m.Processes() {
		pids = append(pids, p.PID)
	}
	if !slices.Contains(pids, byEnv.PID()) || !slices.Contains(pids, byArg.PID()) {
		t.Errorf("Processes() = %v; want the leaked pids %d (mark in its environment) and %d (on its command line)", m.Processes(), byEnv.PID(), byArg.PID())
	}
	if got := New().Processes(); len(got) != 0 {
		t.Errorf("another mark finds %v", got)
	}
	for _, p := range []*procgroup.Process{byEnv, byArg} {
		p.Signal(syscall.SIGKILL)
		<-p.Done()
	}
	// The leader has ended once Done is closed, but sh's forked child, killed with the group, is
	// torn down on the kernel's own time: wait for it to go, as a hang detector, not a timing.
	deadline := time.Now().Add(30 * time.Second)
	for len(m.Processes()) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := m.Processes(); len(got) != 0 {
		t.Errorf("30 s after the kill Processes() = %v, want none", got)
	}
}
