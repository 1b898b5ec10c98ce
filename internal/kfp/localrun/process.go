package localrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
)

// A step runs as its own process group, as a container has its own PID namespace: when the step's
// main process ends, whatever is left in its group is stopped, as the kubelet stops a container.
// A process that must outlive its step (the local model server) starts its own process group and
// records it in $GANGBOOST_LOCAL_STATE/processes/<name>.json; the runner stops those at the end of
// the run, or at Ctrl-C.

// Process is one record in $GANGBOOST_LOCAL_STATE/processes/<name>.json.
type Process struct {
	PID  int    `json:"pid"`
	PGID int    `json:"pgid"`
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
	GRPC string `json:"grpc,omitempty"`
	// File is the record's path.
	File string `json:"-"`
}

// ProcessesDir is where components record the processes that outlive their step.
func ProcessesDir(stateDir string) string { return filepath.Join(stateDir, "processes") }

// ReadProcesses reads the recorded processes, by name.
func ReadProcesses(stateDir string) ([]Process, error) {
	files, err := filepath.Glob(filepath.Join(ProcessesDir(stateDir), "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Process
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var p Process
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("process record %s: %w", f, err)
		}
		if p.PID <= 0 && p.PGID <= 0 {
			return nil, fmt.Errorf("process record %s: no pid or pgid", f)
		}
		p.File = f
		out = append(out, p)
	}
	return out, nil
}

// StopProcesses stops every recorded process group (TERM, then KILL after grace) and removes its
// record; it returns the ones that were still running.
func StopProcesses(stateDir string, grace time.Duration) ([]Process, error) {
	procs, err := ReadProcesses(stateDir)
	if err != nil {
		return nil, err
	}
	var stopped []Process
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.running() {
				p.stop(grace)
				mu.Lock()
				stopped = append(stopped, p)
				mu.Unlock()
			}
			_ = os.Remove(p.File)
		}()
	}
	wg.Wait()
	sort.Slice(stopped, func(i, j int) bool { return stopped[i].Name < stopped[j].Name })
	return stopped, nil
}

func (p Process) running() bool {
	if p.PGID > 0 {
		return len(procgroup.Members(p.PGID)) > 0
	}
	return procgroup.Alive(p.PID)
}

func (p Process) stop(grace time.Duration) {
	if p.PGID > 0 {
		procgroup.StopGroup(p.PGID, grace)
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for procgroup.Alive(p.PID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
}

// ProcessesWithEnv are the live processes whose environment holds the exact entry kv (readable for
// the user's own processes). Every process a step starts inherits the step's environment unless it
// clears it, so this finds what a run left behind wherever it went.
func ProcessesWithEnv(kv string) []int {
	needle := append([]byte(kv), 0)
	self := os.Getpid()
	var out []int
	for _, pid := range procgroup.PIDs() {
		if pid == self || !procgroup.Alive(pid) {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(b, needle) || bytes.Contains(b, append([]byte{0}, needle...)) {
			out = append(out, pid)
		}
	}
	return out
}

// step is one running step: its process group and its output.
type step struct {
	proc *procgroup.Process
	// output is the read end of the pipe the step's processes print to; the reader closes it
	// once every process holding the write end has closed it.
	output *os.File
	// outputDone is closed when the output has been read to its end.
	outputDone chan struct{}
}

func startStep(argv, env []string, dir string, output func(string)) (*step, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = w
	cmd.Stderr = w
	// Its own process group (stopped as a whole), and killed if the runner itself dies.
	proc, err := procgroup.Start(cmd)
	w.Close() // the step's processes hold their own copies
	if err != nil {
		r.Close()
		return nil, err
	}
	s := &step{proc: proc, output: r, outputDone: make(chan struct{})}
	go func() {
		defer close(s.outputDone)
		// Every finished step releases its pipe here: a run of a thousand steps must not hold a
		// thousand descriptors.
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			output(sc.Text())
		}
	}()
	return s, nil
}

// wait waits for the step's main process; when ctx ends first, the step's group is stopped (TERM,
// then KILL after grace). Either way, whatever is left in its group afterwards is stopped.
func (s *step) wait(ctx context.Context, grace time.Duration, onInterrupt func()) (exitCode int, interrupted bool, err error) {
	pgid := s.proc.PID()
	select {
	case <-s.proc.Done():
	case <-ctx.Done():
		interrupted = true
		if onInterrupt != nil {
			onInterrupt()
		}
		procgroup.StopGroup(pgid, grace)
		<-s.proc.Done()
	}
	err = s.proc.Err()
	// The container ends with its main process.
	procgroup.StopGroup(pgid, 2*time.Second)
	// Output still buffered in the pipe is read; a process that left the group and kept the pipe
	// open keeps being read in the background until the run closes it.
	select {
	case <-s.outputDone:
	case <-time.After(time.Second):
	}
	if err == nil {
		return 0, interrupted, nil
	}
	code := procgroup.ExitCode(err)
	if ws, ok := s.proc.State().Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return code, interrupted, fmt.Errorf("killed by signal %s", ws.Signal())
	}
	if code >= 0 {
		return code, interrupted, fmt.Errorf("exit status %d", code)
	}
	return -1, interrupted, err
}

// outputOpen reports whether a process that left the step's group still holds its output open.
func (s *step) outputOpen() bool {
	select {
	case <-s.outputDone:
		return false
	default:
		return true
	}
}

// close stops reading the step's output.
func (s *step) close() {
	_ = s.output.Close()
}

type tailBuffer struct {
	mu    sync.Mutex
	lines []string
	max   int
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{max: n} }

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailBuffer) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}
