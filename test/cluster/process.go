package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one control-plane component running as a child process.
type process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	err     error
}

// startProcess starts bin in its own process group with its output in
// logDir/<name>.log. The process group lets stop() end the component and
// anything it forked; Pdeathsig makes the kernel kill it if the test binary
// dies without cleanup (go test -timeout panics, SIGKILL).
func startProcess(logDir, name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "$ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{Name: name, LogPath: logPath, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id, which is also its process group id.
func (p *process) PID() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if ok, _ := p.exited(); ok {
		return
	}
	pgid := p.PID()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Children that ignored SIGTERM and outlived the leader.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

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

// portAllocator hands out free loopback ports. A port is free when the
// kernel gives it for :0; ports handed out are remembered so two components
// of one cluster never get the same one.
type portAllocator struct {
	mu   sync.Mutex
	used map[int]bool
}

var ports = &portAllocator{used: map[int]bool{}}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on and that
// this process has not handed out before.
func FreePort() (int, error) { return ports.get() }

func (a *portAllocator) get() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !a.used[port] {
			a.used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port after 100 tries")
}

// logf writes a progress line with the time elapsed since start.
func logf(w io.Writer, start time.Time, format string, args ...any) {
	fmt.Fprintf(w, "cluster %6.1fs: %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
