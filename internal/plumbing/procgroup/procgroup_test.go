package procgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a parent that starts a child with Start and then dies.
const helperEnv = "PROCGROUP_TEST_ORPHAN"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		orphanMain()
	}
	os.Exit(m.Run())
}

// orphanMain starts a long sleep, prints its pid and kills itself without any cleanup.
func orphanMain() {
	p, err := Start(exec.Command("sleep", "300"))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString(strconv.Itoa(p.PID()) + "\n")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// startShell starts sh -c script with Start and returns the process and the first line it prints.
func startShell(t *testing.T, script string) (*Process, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout = w
	p, err := Start(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Signal(p.PID(), syscall.SIGKILL); <-p.Done() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the shell's first line: %v", err)
	}
	return p, strings.TrimSpace(line)
}

// gone waits until pid no longer runs. The kernel tears a killed process down at once; the 30 s
// are a hang guard, so that a slow teardown on a loaded machine is not taken for a survivor.
func gone(pid int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func TestStopEndsTheWholeGroup(t *testing.T) {
	// The leader forks a grandchild and waits for it: stopping the leader alone would leave it.
	p, line := startShell(t, `sleep 300 & echo $!; wait`)
	grandchild, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	if got := Members(p.PID()); len(got) != 2 {
		t.Fatalf("group %d has members %v, want the shell and its sleep", p.PID(), got)
	}
	p.Stop(time.Minute)
	if !gone(grandchild) {
		t.Errorf("grandchild %d still runs after Stop", grandchild)
	}
	if m := Members(p.PID()); len(m) > 0 {
		t.Errorf("group %d still has %v", p.PID(), m)
	}
	if code := ExitCode(p.Err()); code != 128+int(syscall.SIGTERM) {
		t.Errorf("leader's exit code %d (%v), want %d (SIGTERM)", code, p.Err(), 128+int(syscall.SIGTERM))
	}
}

func TestStopKillsWhatIgnoresSIGTERMAfterGrace(t *testing.T) {
	p, _ := startShell(t, `trap '' TERM; echo ready; while :; do sleep 1; done`)
	p.Stop(200 * time.Millisecond)
	if code := ExitCode(p.Err()); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code %d (%v), want %d: SIGKILL after the grace period", code, p.Err(), 128+int(syscall.SIGKILL))
	}
	if m := Members(p.PID()); len(m) > 0 {
		t.Errorf("group %d still has %v", p.PID(), m)
	}
}

func TestStopKillsMembersThatOutliveTheLeader(t *testing.T) {
	// The leader ends on SIGTERM at once; its child ignores it and must not be left running.
	p, child := startShell(t, `trap 'exit 0' TERM; (trap '' TERM; while :; do sleep 1; done) & echo $!; wait`)
	pid, err := strconv.Atoi(child)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(time.Minute)
	if code := ExitCode(p.Err()); code != 0 {
		t.Errorf("leader's exit code %d (%v), want 0: it ends on SIGTERM by itself", code, p.Err())
	}
	if !gone(pid) {
		t.Errorf("child %d, which ignored SIGTERM, still runs after its leader was stopped", pid)
	}
}

func TestEndedProcessIsReaped(t *testing.T) {
	p, err := Start(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if _, err := os.Stat("/proc/" + strconv.Itoa(p.PID())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid %d is still in /proc after Done (a zombie nobody reaped?): %v", p.PID(), err)
	}
	if p.Err() != nil || ExitCode(p.Err()) != 0 {
		t.Errorf("true: %v", p.Err())
	}
}

func TestChildDiesWithItsParent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, _ := cmd.Output() // the helper kills itself
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("helper printed %q, want its child's pid", out)
	}
	if !gone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("child %d outlived its parent", pid)
	}
}

func TestStopGroupOfAProcessNotOurChild(t *testing.T) {
	// A detached group, stopped only by its id, as the local runner stops a recorded server.
	cmd := exec.Command("sh", "-c", `trap '' TERM; sleep 300 & wait`)
	p, err := StartDetached(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Signal(p.PID(), syscall.SIGKILL) }()
	StopGroup(p.PID(), 100*time.Millisecond)
	if m := Members(p.PID()); len(m) > 0 {
		t.Errorf("group %d still has %v after StopGroup", p.PID(), m)
	}
	<-p.Done()
}

func TestStartingAndReapingLeavesNoFileDescriptors(t *testing.T) {
	const n = 200
	before := openFDs(t)
	for range n {
		f, err := os.CreateTemp(t.TempDir(), "log")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("true")
		cmd.Stdout, cmd.Stderr = f, f
		p, err := Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		f.Close()
	}
	after := openFDs(t)
	t.Logf("open file descriptors: %d before, %d after %d processes", before, after, n)
	if after > before+5 {
		t.Errorf("open file descriptors grew from %d to %d over %d processes", before, after, n)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 137},
		{"kill -TERM $$", 143},
	} {
		err := exec.Command("sh", "-c", tc.script).Run()
		if got := ExitCode(err); got != tc.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tc.script, err, got, tc.want)
		}
	}
	if got := ExitCode(errors.New("not started")); got != -1 {
		t.Errorf("ExitCode of a non-exit error = %d, want -1", got)
	}
}

func TestSignalRefusesOwnAndInitGroups(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if err := Signal(pgid, syscall.Signal(0)); err == nil {
			t.Errorf("Signal(%d) sent a signal", pgid)
		}
	}
}
