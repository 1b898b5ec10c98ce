package leaktest

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The check finds a process deliberately left running with the mark in its environment, and one
// with it only on its command line, in a process group of their own as a runaway helper would be;
// once they are gone it finds nothing, and another run's mark finds neither.
func TestProcessesFindsALeakedProcess(t *testing.T) {
	m := New()
	if got := m.Processes(); len(got) != 0 {
		t.Fatalf("a new mark is carried by %v", got)
	}
	start := func(cmd *exec.Cmd) *exec.Cmd {
		t.Helper()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	byEnv := exec.Command("sleep", "60")
	byEnv.Env = append(os.Environ(), m.Env())
	start(byEnv)
	byArg := start(exec.Command("sh", "-c", "sleep 60; : "+string(m)))

	var pids []int
	for _, p := range m.Processes() {
		pids = append(pids, p.PID)
	}
	if !slices.Contains(pids, byEnv.Process.Pid) || !slices.Contains(pids, byArg.Process.Pid) {
		t.Errorf("Processes() = %v; want the leaked pids %d (mark in its environment) and %d (on its command line)", m.Processes(), byEnv.Process.Pid, byArg.Process.Pid)
	}
	if got := New().Processes(); len(got) != 0 {
		t.Errorf("another mark finds %v", got)
	}
	for _, c := range []*exec.Cmd{byEnv, byArg} {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Wait()
	}
	// The leader is reaped by Wait, but sh's forked child (killed with the group) is reaped by
	// init on its own time: wait for it to go, as a hang detector rather than a timing.
	deadline := time.Now().Add(30 * time.Second)
	for len(m.Processes()) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := m.Processes(); len(got) != 0 {
		t.Errorf("30 s after the kill Processes() = %v, want none", got)
	}
}
