package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

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

// portAllocator hands out free loopback ports. Pods of the test cluster share the host's
// loopback, where in a cluster each has its own network namespace, so two rules keep them
// apart from everything else on a busy machine:
//   - ports come from below the kernel's ephemeral range (ip_local_port_range), which every
//     outgoing connection on the machine draws its local port from: a port taken from :0 is
//     free when handed out but may be an ephemeral client port a moment later;
//   - the next port is free and reserved too: the trainer's rank 0 listens on MASTER_PORT and
//     MASTER_PORT+1 (its gang watch), as it may in its own pod.
//
// Ports handed out are remembered so two components of one cluster never get the same one; the
// start is random so test binaries running side by side rarely probe the same ports.
type portAllocator struct {
	mu   sync.Mutex
	used map[int]bool
	next int
}

var ports = &portAllocator{used: map[int]bool{}}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on, whose next port is free
// too, outside the ephemeral range, and that this process has not handed out before.
func FreePort() (int, error) { return ports.get() }

// FreePorts is n FreePort results, for a component that listens on several.
func FreePorts(n int) ([]int, error) {
	ps := make([]int, n)
	for i := range ps {
		p, err := ports.get()
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// portRangeLow is where handed-out ports start; the range ends at the ephemeral range.
const portRangeLow = 20000

func (a *portAllocator) get() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	hi := ephemeralLow()
	span := hi - portRangeLow
	if span < 1000 {
		return 0, fmt.Errorf("no room for test ports below the ephemeral range (starts at %d)", hi)
	}
	if a.next == 0 {
		a.next = portRangeLow + rand.IntN(span)
	}
	for i := 0; i < span; i++ {
		p := a.next
		a.next++
		if a.next+1 >= hi {
			a.next = portRangeLow
		}
		if a.used[p] || a.used[p+1] || !canListen(p) || !canListen(p+1) {
			continue
		}
		a.used[p], a.used[p+1] = true, true
		return p, nil
	}
	return 0, fmt.Errorf("no free loopback port pair in [%d, %d)", portRangeLow, hi)
}

func canListen(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when unreadable).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= portRangeLow {
		return 32768
	}
	return n
}

// logf writes a progress line with the time elapsed since start.
func logf(w io.Writer, start time.Time, format string, args ...any) {
	fmt.Fprintf(w, "cluster %6.1fs: %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
