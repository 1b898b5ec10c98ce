// Package procgroup starts a command as its own process group and stops the group as a whole, as
// the kubelet stops a container: SIGTERM to every process in it, SIGKILL to whatever is left after
// a grace period. A process group holds what the command forked too, so stopping it leaves nothing
// of the command running.
package procgroup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// killWait is how long Stop waits for a group to empty after SIGKILL: the kernel tears a killed
// process down in milliseconds, unless it is stuck in uninterruptible I/O.
const killWait = 5 * time.Second

// pollEvery is how often Stop looks at a group that is not this process's child.
const pollEvery = 20 * time.Millisecond

// Process is a command started as the leader of its own process group. It is reaped in the
// background as soon as it ends, so it never lingers as a zombie and its Wait resources (the
// pidfd Go holds for it) are released without the caller having to call Wait.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd as the leader of a new process group that the kernel kills (SIGKILL) when this
// process dies first, so nothing it started outlives a crashed or killed parent. Fields of
// cmd.SysProcAttr other than the group and the parent-death signal (Unshareflags, say) are kept.
//
// cmd's Stdout and Stderr should be files (or nil): with any other writer, exec copies through a
// pipe that a grandchild holding it open keeps from ending, and the Process would not end with
// its leader.
func Start(cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := startOnLockedThread(cmd); err != nil {
		return nil, err
	}
	return reap(cmd), nil
}

// StartDetached starts cmd in a new session, which makes it the leader of its own process group
// too, that outlives this process: neither its end nor a Ctrl-C in its terminal stops the
// command. Whoever stops it later does so by its group id (StopGroup), as it may not be their
// child. While this process lives, it reaps the command when it ends.
func StartDetached(cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Pdeathsig = 0
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return reap(cmd), nil
}

func reap(cmd *exec.Cmd) *Process {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// PID is the leader's process id, which is also the group's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the leader has ended and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is what exec.Cmd.Wait returned for the leader (nil for exit status 0); valid once Done is
// closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// State is the leader's exit state; valid once Done is closed.
func (p *Process) State() *os.ProcessState {
	<-p.done
	return p.cmd.ProcessState
}

// Exited reports whether the leader has ended, without waiting.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to every process of the group, which may outlive its leader: the kernel does
// not reuse its id while a member runs.
func (p *Process) Signal(sig syscall.Signal) { _ = Signal(p.PID(), sig) }

// Stop ends the group as the kubelet ends a container: SIGTERM to the group, SIGKILL to it when
// the leader has not ended within grace, and SIGKILL once more, after the leader has ended, to
// the processes of the group that ignored SIGTERM. It returns once the leader has been reaped and
// the group has no live process (or a few seconds after SIGKILL, for a process stuck in the kernel).
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	pgid := p.PID()
	_ = Signal(pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = Signal(pgid, syscall.SIGKILL)
		<-p.done
	}
	// The group outlives its leader while a member runs; its id is not reused before it empties.
	if len(Members(pgid)) > 0 {
		_ = Signal(pgid, syscall.SIGKILL)
		waitEmpty(pgid, killWait)
	}
}

// ExitCode is the exit code a shell (and the kubelet) reports for what exec.Cmd.Wait returned:
// the status, or 128 plus the signal number for a process killed by a signal; -1 when err is not
// an exit at all.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// Signal sends sig to every process of the group pgid. A group that is gone (ESRCH) is not an
// error; pgid 0 and 1 (this process's own group, init's) are refused.
func Signal(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("procgroup: refusing to signal process group " + strconv.Itoa(pgid))
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// StopGroup stops a process group that need not be this process's child (a recorded one): SIGTERM,
// then, when it still has live processes after grace, SIGKILL; it returns once the group has no
// live process (or after a few seconds more, for a process stuck in the kernel).
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 1 || len(Members(pgid)) == 0 {
		return
	}
	_ = Signal(pgid, syscall.SIGTERM)
	if waitEmpty(pgid, grace) {
		return
	}
	_ = Signal(pgid, syscall.SIGKILL)
	waitEmpty(pgid, killWait)
}

func waitEmpty(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(Members(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// stat is the part of /proc/<pid>/stat read here.
type stat struct {
	pgid  int
	state byte
}

func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return stat{}, false
	}
	pgid, _ := strconv.Atoi(f[2])
	return stat{pgid: pgid, state: f[0][0]}, true
}

// live is a state of a process that still runs: not a zombie (ended, not yet reaped by its
// parent; PID 1 in a container may never reap) and not dead.
func live(s stat) bool { return s.state != 'Z' && s.state != 'X' }

// Alive reports whether process pid exists and has not ended (a zombie has).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	s, ok := readStat(pid)
	return ok && live(s)
}

// PIDs are the ids of every process this process can see.
func PIDs() []int {
	ents, _ := os.ReadDir("/proc")
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Members are the live processes of the process group pgid.
func Members(pgid int) []int {
	var out []int
	for _, pid := range PIDs() {
		if s, ok := readStat(pid); ok && s.pgid == pgid && live(s) {
			out = append(out, pid)
		}
	}
	return out
}

// starter starts processes from one goroutine locked to its OS thread for the life of the
// program: the kernel sends Pdeathsig when the thread that forked the child ends, not the
// process, and Go may end threads (a goroutine that exits while locked to its thread takes the
// thread with it), which would kill a healthy child.
var starter struct {
	once sync.Once
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

func startOnLockedThread(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan startReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for r := range starter.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starter.reqs <- startReq{cmd: cmd, done: done}
	return <-done
}
