package localgang

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/training/gangenv"
)

// loopback is where the local gang's replicas find each other: the master's address and each
// worker's, which in a cluster are the pods' service names.
const loopback = "127.0.0.1"

// logDrainTimeout bounds how long Run waits for a replica's log pipe to close after the replica
// ended: a process that escaped the replica's process group may hold it open for ever.
const logDrainTimeout = 2 * time.Second

// beforeStart, when set (by tests), runs before each replica starts; an error fails that start
// as if exec had failed, after the lower ranks have started.
var beforeStart func(rank int) error

type gang struct {
	job   Job
	path  string
	logs  *logSink
	res   *Result
	exits chan exit

	procs []*proc
}

type proc struct {
	rank    int
	name    string
	proc    *procgroup.Process
	logR    *os.File
	logDone chan struct{}
	alive   bool
}

type exit struct {
	rank  int
	state *os.ProcessState
	err   error
	at    time.Time
}

// start starts every replica, or none: if one fails to start, those already started are killed.
func (g *gang) start() error {
	n := g.job.Workers + 1
	workerAddrs := make([]string, g.job.Workers)
	for i := range workerAddrs {
		workerAddrs[i] = loopback
	}
	g.res.Replicas = make([]Replica, n)
	for rank := range n {
		g.res.Replicas[rank] = Replica{Name: ReplicaName(rank), Rank: rank, ExitCode: -1}
	}
	for rank := range n {
		p := &proc{rank: rank, name: ReplicaName(rank), logDone: make(chan struct{})}
		pr, pw, err := os.Pipe()
		if err != nil {
			g.abortStart()
			return fmt.Errorf("gang %s: start %s: log pipe: %w", g.job.Name, p.name, err)
		}
		cmd := &exec.Cmd{
			Path:   g.path,
			Args:   append([]string{g.job.Command}, g.job.Args...),
			Env:    gangenv.ReplicaEnv(g.job.Env, loopback, g.res.MasterPort, workerAddrs, g.res.WorkerPort, rank),
			Dir:    g.job.Dir,
			Stdout: pw,
			Stderr: pw,
		}
		if beforeStart != nil {
			err = beforeStart(rank)
		}
		if err == nil {
			// A process group per replica, as a container is one: stopping a replica stops
			// whatever it started; the replica ends if the launcher itself dies.
			p.proc, err = procgroup.Start(cmd)
		}
		pw.Close() // the child holds its own copy
		if err != nil {
			pr.Close()
			stopped := g.abortStart()
			return fmt.Errorf("gang %s: start %s: %w (stopped the %d replicas already started)", g.job.Name, p.name, err, stopped)
		}
		p.alive, p.logR = true, pr
		g.res.Replicas[rank].Pid = p.proc.PID()
		g.res.Replicas[rank].Started = time.Now()
		g.procs = append(g.procs, p)
		go g.logs.pump(pr, "["+p.name+"] ", p.logDone)
		go func() {
			<-p.proc.Done()
			g.exits <- exit{rank: p.rank, state: p.proc.State(), err: p.proc.Err(), at: time.Now()}
		}()
	}
	if g.job.Started != nil {
		g.job.Started()
	}
	g.logs.printf("gang %s started: %s and %d workers, MASTER_ADDR=%s MASTER_PORT=%d WORLD_SIZE=%d",
		g.job.Name, ReplicaName(0), g.job.Workers, loopback, g.res.MasterPort, n)
	return nil
}

// abortStart kills the replicas started so far and waits for them; it returns how many.
func (g *gang) abortStart() int {
	for _, p := range g.procs {
		p.proc.Signal(syscall.SIGKILL)
	}
	for range g.procs {
		g.record(<-g.exits, true)
	}
	g.drainLogs()
	return len(g.procs)
}

// wait waits for every replica to end, stopping the rest GracePeriod after the first failure or
// at once when ctx ends, and returns the failure that caused the others: the first one that is
// not a replica reporting a lost peer, or else the first one.
func (g *gang) wait(ctx context.Context) error {
	var (
		first     *ReplicaError // starts the grace period
		cause     *ReplicaError // the first failure that is not a report of a lost peer
		canceled  error
		graceEnd  <-chan time.Time
		killAt    <-chan time.Time
		stopping  bool
		remaining = len(g.procs)
	)
	stop := func(why string) {
		if stopping {
			return
		}
		stopping = true
		var names []string
		for _, p := range g.procs {
			if p.alive {
				names = append(names, p.name)
				g.res.Replicas[p.rank].Killed = true
				p.proc.Signal(syscall.SIGTERM)
			}
		}
		if len(names) > 0 {
			g.logs.printf("gang %s: %s: stopping %s (SIGTERM, SIGKILL after %s)", g.job.Name, why, strings.Join(names, ", "), g.job.TerminationGracePeriod)
		}
		killAt = time.After(g.job.TerminationGracePeriod)
	}
	done := ctx.Done()
	for remaining > 0 {
		select {
		case e := <-g.exits:
			remaining--
			rerr := g.record(e, false)
			if rerr == nil || canceled != nil || g.res.Replicas[e.rank].Killed {
				continue
			}
			if cause == nil && !g.reportsLostPeer(rerr) {
				cause = rerr
				if first != nil {
					// A survivor saw this replica go before the launcher reaped it.
					g.logs.printf("gang %s: %v (the failure %s reported)", g.job.Name, rerr, first.Replica)
				}
			}
			if first == nil {
				first = rerr
				if remaining > 0 {
					if g.job.GracePeriod < 0 {
						stop(rerr.Error())
					} else {
						g.logs.printf("gang %s: %v; the others have %s to exit", g.job.Name, rerr, g.job.GracePeriod)
						graceEnd = time.After(g.job.GracePeriod)
					}
				}
			}
		case <-graceEnd:
			graceEnd = nil
			stop("grace period after " + first.Error() + " is over")
		case <-done:
			done = nil
			canceled = ctx.Err()
			stop("canceled")
		case <-killAt:
			killAt = nil
			for _, p := range g.procs {
				if p.alive {
					p.proc.Signal(syscall.SIGKILL)
				}
			}
		}
	}
	g.drainLogs()
	switch {
	case cause != nil:
		return fmt.Errorf("gang %s failed: %w", g.job.Name, cause)
	case first != nil:
		return fmt.Errorf("gang %s failed: %w", g.job.Name, first)
	case canceled != nil:
		return fmt.Errorf("gang %s canceled: %w", g.job.Name, canceled)
	}
	return nil
}

// reportsLostPeer reports whether a replica's failure is its report that another replica was lost.
func (g *gang) reportsLostPeer(e *ReplicaError) bool {
	return g.job.PeerLostExitCode != 0 && e.Signal == 0 && e.ExitCode == g.job.PeerLostExitCode
}

// record notes a replica's end; it returns the failure, if it failed.
func (g *gang) record(e exit, killed bool) *ReplicaError {
	p := g.procs[e.rank]
	p.alive = false
	// When a container's main process ends, the rest of the container goes with it.
	p.proc.Signal(syscall.SIGKILL)
	r := &g.res.Replicas[e.rank]
	r.Duration = e.at.Sub(r.Started)
	r.Killed = r.Killed || killed
	if e.state == nil {
		return &ReplicaError{Replica: p.name, Rank: p.rank, ExitCode: -1}
	}
	r.ExitCode = e.state.ExitCode()
	if ws, ok := e.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = ws.Signal()
	}
	if r.ExitCode == 0 {
		return nil
	}
	return &ReplicaError{Replica: p.name, Rank: p.rank, ExitCode: r.ExitCode, Signal: r.Signal}
}

// drainLogs waits until every replica's log has been written out, so that Run returns after the
// last line; a pipe still held open by an escaped process is closed after logDrainTimeout.
func (g *gang) drainLogs() {
	deadline := time.After(logDrainTimeout)
	for _, p := range g.procs {
		select {
		case <-p.logDone:
		case <-deadline:
			p.logR.Close() // makes the pending Read return
			<-p.logDone
		}
	}
}

// logSink writes whole lines from all replicas to one writer, never interleaving two lines.
type logSink struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (s *logSink) printf(format string, args ...any) {
	s.line("", []byte(fmt.Sprintf(format, args...)))
}

func (s *logSink) line(prefix string, text []byte) {
	s.mu.Lock()
	s.buf = append(append(append(s.buf[:0], prefix...), text...), '\n')
	_, _ = s.w.Write(s.buf) // a failing log writer must not stop the gang
	s.mu.Unlock()
}

// pump copies r to the sink line by line with prefix until EOF; lines longer than the buffer
// are split.
func (s *logSink) pump(r *os.File, prefix string, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			s.line(prefix, trimEOL(line))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
