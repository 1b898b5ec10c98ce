package localrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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
		return len(GroupMembers(p.PGID)) > 0
	}
	return alive(p.PID)
}

func (p Process) stop(grace time.Duration) {
	if p.PGID > 0 {
		StopGroup(p.PGID, grace)
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(p.PID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
}

// StopGroup sends TERM to a process group, waits up to grace for it to empty, then sends KILL and
// waits for it to empty.
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 1 || len(GroupMembers(pgid)) == 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupEmpty(pgid, grace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupEmpty(pgid, 5*time.Second)
}

func waitGroupEmpty(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(GroupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStat is the part of /proc/<pid>/stat the runner reads.
type procStat struct {
	pid, ppid, pgid int
	state           byte
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return procStat{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0]}, true
}

// alive reports whether a process exists and is not a zombie (an exited process nobody reaped:
// PID 1 in a container may never reap).
func alive(pid int) bool {
	s, ok := readStat(pid)
	return ok && s.state != 'Z' && s.state != 'X'
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// GroupMembers are the live (not zombie) processes of a process group.
func GroupMembers(pgid int) []int {
	var out []int
	for _, pid := range allPIDs() {
		if s, ok := readStat(pid); ok && s.pgid == pgid && s.state != 'Z' && s.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// ProcessesWithEnv are the live processes whose environment holds the exact entry kv (readable for
// the user's own processes). Every process a step starts inherits the step's environment unless it
// clears it, so this finds what a run left behind wherever it went.
func ProcessesWithEnv(kv string) []int {
	needle := append([]byte(kv), 0)
	self := os.Getpid()
	var out []int
	for _, pid := range allPIDs() {
		if pid == self || !alive(pid) {
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

// step is one running step: its process, its group, its output.
type step struct {
	cmd     *exec.Cmd
	readers sync.WaitGroup
	pipeR   *os.File
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	w.Close()
	s := &step{cmd: cmd, pipeR: r}
	s.readers.Add(1)
	go func() {
		defer s.readers.Done()
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
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	pgid := s.cmd.Process.Pid
	select {
	case err = <-done:
	case <-ctx.Done():
		interrupted = true
		if onInterrupt != nil {
			onInterrupt()
		}
		stopped := make(chan struct{})
		go func() { StopGroup(pgid, grace); close(stopped) }()
		err = <-done
		<-stopped
	}
	// The container ends with its main process.
	StopGroup(pgid, 2*time.Second)
	// Output still buffered in the pipe is read; a process that left the group and kept the pipe
	// open keeps being read in the background until the run closes it.
	waitTimeout(&s.readers, time.Second)
	if err == nil {
		return 0, interrupted, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), interrupted, fmt.Errorf("killed by signal %s", ws.Signal())
		}
		return ee.ExitCode(), interrupted, fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return -1, interrupted, err
}

func (s *step) close() {
	_ = s.pipeR.Close()
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
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
