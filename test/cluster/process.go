package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
)

// process is one control-plane component running as a child process.
type process struct {
	Name    string
	LogPath string
	proc    *procgroup.Process
}

// startProcess starts bin in its own process group with its output in
// logDir/<name>.log. The process group lets stop() end the component and
// anything it forked; the kernel kills it if the test binary dies without
// cleanup (go test -timeout panics, SIGKILL).
func startProcess(logDir, name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The component holds its own copy of the log file.
	defer f.Close()
	fmt.Fprintf(f, "$ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	proc, err := procgroup.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	return &process{Name: name, LogPath: logPath, proc: proc}, nil
}

// PID is the process id, which is also its process group id.
func (p *process) PID() int { return p.proc.PID() }

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	if !p.proc.Exited() {
		return false, nil
	}
	if err := p.proc.Err(); err != nil {
		return true, err
	}
	return true, errors.New("exited with status 0")
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) { p.proc.Stop(grace) }

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a port for one of the test cluster's components or pods. Pods share the host's
// loopback, where in a cluster each has its own network namespace, so a port handed out is never
// handed out again (netport holds it for this process), its next port is free and reserved too
// (the trainer's rank 0 listens on MASTER_PORT and MASTER_PORT+1, its gang watch, as it may in its
// own pod), and both lie outside the kernel's ephemeral range.
func FreePort() (int, error) { return netport.Pick(true, nil) }

// FreePorts is n FreePort results, for a component that listens on several.
func FreePorts(n int) ([]int, error) {
	ps := make([]int, n)
	for i := range ps {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// logf writes a progress line with the time elapsed since start.
func logf(w io.Writer, start time.Time, format string, args ...any) {
	fmt.Fprintf(w, "cluster %6.1fs: %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
