// Package localgang runs an XGBoostJob on the local machine: the Master and N Workers start as
// processes on loopback, all together or not at all, with the environment the Kubeflow Training
// Operator v1 injects into the job's pods.
package localgang

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
)

// Defaults for the zero values of Job's durations.
const (
	DefaultGracePeriod            = 30 * time.Second
	DefaultTerminationGracePeriod = 10 * time.Second
)

// ErrGangTooLarge is wrapped by Run's error when a job needs more slots than the launcher has:
// it could never start, so Run does not wait.
var ErrGangTooLarge = errors.New("gang larger than the launcher")

// Launcher runs gangs on a fixed budget of slots, one slot per replica process. A gang takes all
// its slots at once or waits; waiting gangs start in arrival order, so a large gang is not
// starved by a stream of small ones (as a FIFO queue in Volcano). A Launcher is safe for
// concurrent Run calls; its zero value is ready to use.
type Launcher struct {
	// Slots is how many replica processes may run at once; 0 means 2 x runtime.NumCPU(). It is
	// read on first use.
	Slots int

	mu     sync.Mutex
	inited bool
	total  int
	free   int
	queue  []*waiter
	ports  map[int]bool // ports handed to running gangs and not yet released
}

type waiter struct {
	need    int
	granted bool
	ready   chan struct{}
}

// Job is one gang: a Master and Workers running the same command, as the replicas of an
// XGBoostJob run the same image.
type Job struct {
	Name    string // names the gang in log lines and errors
	Command string // a program in PATH, or a path (relative paths are relative to Dir)
	Args    []string
	Workers int // Worker replicas besides the Master; 0 runs the Master alone
	// Env is the replicas' base environment, like a container's env; nil means the launcher's
	// own environment. The Training Operator's variables (gangenv.OperatorEnv) replace any
	// distributed-training variables in it, Kubeflow Trainer v2's DMLC_* ones included.
	Env []string
	// MasterPort is MASTER_PORT; 0 picks a free port whose successor is free too (the trainer's
	// gang watch listens on MASTER_PORT+1 by default).
	MasterPort int
	// WorkerPort is WORKER_PORT; 0 picks a free port. XGBoost does not use it.
	WorkerPort int
	Dir        string
	// Stdout receives every replica's stdout and stderr, line by line with a "[master-0] " or
	// "[worker-<i>] " prefix (i = 0..N-1 as in the pod names; worker-i has RANK i+1), and the
	// launcher's own lines ("gang <name> ..."). Nil means os.Stdout.
	Stdout io.Writer
	// GracePeriod is how long the other replicas may run on after the first one fails (the
	// trainer makes them fail through its collective timeout) before they are stopped; 0 means
	// DefaultGracePeriod, < 0 stops them at once.
	GracePeriod time.Duration
	// Waiting, when set, is called with the reason each time the gang waits for slots, and
	// Started once its replicas run, each before the line that says so: a caller follows the
	// gang's state without parsing its log.
	Waiting func(reason string)
	Started func()
	// TerminationGracePeriod is the time between SIGTERM and SIGKILL when replicas are stopped,
	// as terminationGracePeriodSeconds is for a pod; 0 means DefaultTerminationGracePeriod.
	TerminationGracePeriod time.Duration
	// PeerLostExitCode, when not 0, is the exit code by which a replica says that another replica
	// was lost (gangboost-train's 3). Such a failure is a consequence: Run's error names the
	// replica that failed for its own reason (killed, or another exit code) when there is one,
	// even if a survivor noticed the loss and exited before the lost replica was reaped.
	PeerLostExitCode int
	// RestartPolicy is what follows a failed replica, named as an XGBoostJob replica spec's
	// restartPolicy: "" or RestartNever fails the gang; RestartOnFailure starts the whole gang
	// again once every replica has ended, on the same ports, as the kubelet restarts the failed
	// containers of an XGBoostJob with restartPolicy OnFailure in place (when one rank is lost,
	// the others exit too, so every replica restarts). A canceled gang never restarts.
	RestartPolicy string
	// BackoffLimit bounds the restarts as the Training Operator's runPolicy.backoffLimit does:
	// the replicas' restarts counted together, so restarting a gang of a Master and N Workers
	// counts N+1, and the job fails once they reach the limit. A restart that would reach it is
	// not made and the gang fails.
	BackoffLimit int
}

// Restart policies Job.RestartPolicy takes.
const (
	RestartNever     = "Never"
	RestartOnFailure = "OnFailure"
)

// Result is what happened to a gang's replicas.
type Result struct {
	Replicas   []Replica     // by rank: master-0, worker-0, ..., worker-(N-1), of the last run
	Restarts   int           // times the whole gang was started again (Job.RestartPolicy)
	Waited     time.Duration // time spent waiting for slots
	MasterPort int
	WorkerPort int
}

// Replica is one replica process's outcome.
type Replica struct {
	Name     string // "master-0", "worker-0", ...
	Rank     int    // RANK: 0 for the master, i+1 for worker-i
	Pid      int
	ExitCode int            // -1 when ended by a signal or never started
	Signal   syscall.Signal // the signal that ended it, or 0
	Killed   bool           // the launcher stopped it (after another replica failed, or on cancel)
	Started  time.Time
	Duration time.Duration
}

// ReplicaError is a replica that ended with a non-zero exit code or by a signal.
type ReplicaError struct {
	Replica  string
	Rank     int
	ExitCode int
	Signal   syscall.Signal
}

func (e *ReplicaError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("%s (rank %d) was killed by %s", e.Replica, e.Rank, signalName(e.Signal))
	}
	return fmt.Sprintf("%s (rank %d) exited with code %d", e.Replica, e.Rank, e.ExitCode)
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE", syscall.SIGTERM: "SIGTERM",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s)
}

// ReplicaName is the replica's name for a rank, the pod name's suffix in a cluster.
func ReplicaName(rank int) string {
	if rank == 0 {
		return "master-0"
	}
	return "worker-" + strconv.Itoa(rank-1)
}

// Run starts the gang once all Workers+1 slots are free, streams its logs and waits for every
// replica to end. The error names the first replica that failed (a *ReplicaError, wrapped; see
// Job.PeerLostExitCode for which failure counts as first), or
// says why the gang did not start; the Result is non-nil whenever processes ran. Canceling ctx
// stops every replica (SIGTERM, then SIGKILL after TerminationGracePeriod).
func (l *Launcher) Run(ctx context.Context, j Job) (*Result, error) {
	if j.Name == "" {
		j.Name = "local"
	}
	if j.Stdout == nil {
		j.Stdout = os.Stdout
	}
	if j.GracePeriod == 0 {
		j.GracePeriod = DefaultGracePeriod
	}
	if j.TerminationGracePeriod <= 0 {
		j.TerminationGracePeriod = DefaultTerminationGracePeriod
	}
	if j.Workers < 0 {
		return nil, fmt.Errorf("gang %s: %d workers: want 0 or more", j.Name, j.Workers)
	}
	switch j.RestartPolicy {
	case "", RestartNever, RestartOnFailure:
	default:
		return nil, fmt.Errorf("gang %s: restart policy %q: want %s or %s", j.Name, j.RestartPolicy, RestartNever, RestartOnFailure)
	}
	if j.BackoffLimit < 0 {
		return nil, fmt.Errorf("gang %s: backoff limit %d: want 0 or more", j.Name, j.BackoffLimit)
	}
	if j.Env == nil {
		j.Env = os.Environ()
	}
	// Everything that can be checked is checked before a slot is taken, so a bad job neither
	// waits nor starts a single process.
	path, err := resolveCommand(j.Command, j.Dir)
	if err != nil {
		return nil, fmt.Errorf("gang %s: %w", j.Name, err)
	}
	logs := &logSink{w: j.Stdout}
	need := j.Workers + 1
	waitStart := time.Now()
	if err := l.acquire(ctx, j, need, logs); err != nil {
		return nil, err
	}
	defer l.release(need)
	res := &Result{Waited: time.Since(waitStart)}

	var picked []int
	if res.MasterPort, res.WorkerPort, picked, err = l.reservePorts(j.MasterPort, j.WorkerPort); err != nil {
		return nil, fmt.Errorf("gang %s: %w", j.Name, err)
	}
	defer l.releasePorts(picked, res.MasterPort, res.WorkerPort)

	for {
		g := &gang{job: j, path: path, logs: logs, res: res, exits: make(chan exit, need)}
		if err := g.start(); err != nil {
			return res, err
		}
		err := g.wait(ctx)
		if err == nil || ctx.Err() != nil || j.RestartPolicy != RestartOnFailure {
			return res, err
		}
		// The operator fails a job whose replicas' restarts reach the limit (PastBackoffLimit).
		if used := res.Restarts * need; used+need >= j.BackoffLimit {
			logs.printf("gang %s: not restarted: %d more replica restarts would reach the backoff limit %d (%d used)", j.Name, need, j.BackoffLimit, used)
			return res, fmt.Errorf("%w (backoff limit %d reached after %d restarts of the gang)", err, j.BackoffLimit, res.Restarts)
		}
		res.Restarts++
		logs.printf("gang %s restarting (restart %d, %d of backoff limit %d replica restarts): %v", j.Name, res.Restarts, res.Restarts*need, j.BackoffLimit, err)
	}
}

// resolveCommand finds the program the way exec would, but up front.
func resolveCommand(command, dir string) (string, error) {
	if command == "" {
		return "", errors.New("no command given")
	}
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("working directory %s is not a directory", dir)
		}
	}
	if strings.Contains(command, "/") && !filepath.IsAbs(command) && dir != "" {
		command = filepath.Join(dir, command)
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("command %q: %w", command, err)
	}
	return filepath.Abs(path)
}

func (l *Launcher) init() {
	if l.inited {
		return
	}
	l.inited = true
	l.total = l.Slots
	if l.total <= 0 {
		l.total = 2 * runtime.NumCPU()
	}
	l.free = l.total
	l.ports = map[int]bool{}
}

// acquire takes need slots at once, waiting in line while they are not free.
func (l *Launcher) acquire(ctx context.Context, j Job, need int, logs *logSink) error {
	name := j.Name
	l.mu.Lock()
	l.init()
	if need > l.total {
		l.mu.Unlock()
		return fmt.Errorf("gang %s needs %d slots (a master and %d workers) but the launcher has %d: %w",
			name, need, need-1, l.total, ErrGangTooLarge)
	}
	if len(l.queue) == 0 && l.free >= need {
		l.free -= need
		l.mu.Unlock()
		return nil
	}
	w := &waiter{need: need, ready: make(chan struct{})}
	ahead, free, total := len(l.queue), l.free, l.total
	l.queue = append(l.queue, w)
	l.mu.Unlock()

	why := fmt.Sprintf("needs %d slots, %d of %d free", need, free, total)
	if free >= need {
		why += fmt.Sprintf(", but %d gang(s) ahead wait for them", ahead)
	}
	if j.Waiting != nil {
		j.Waiting(why)
	}
	logs.printf("gang %s waiting: %s", name, why)
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.granted {
		l.free += need
	} else {
		for i, q := range l.queue {
			if q == w {
				l.queue = append(l.queue[:i], l.queue[i+1:]...)
				break
			}
		}
	}
	l.dispatch()
	l.mu.Unlock()
	return fmt.Errorf("gang %s: gave up waiting for %d slots: %w", name, need, ctx.Err())
}

func (l *Launcher) release(n int) {
	l.mu.Lock()
	l.free += n
	l.dispatch()
	l.mu.Unlock()
}

// dispatch hands free slots to waiting gangs in arrival order. l.mu is held.
func (l *Launcher) dispatch() {
	for len(l.queue) > 0 && l.queue[0].need <= l.free {
		w := l.queue[0]
		l.queue = l.queue[1:]
		l.free -= w.need
		w.granted = true
		close(w.ready)
	}
}

// reservePorts picks the gang's ports where the job names none, and returns the ports it picked
// (which netport holds for the machine). Ports handed to a running gang, picked or named, are not
// handed out again until it ends, since a replica may not have bound its port yet when the next
// gang asks.
func (l *Launcher) reservePorts(master, worker int) (int, int, []int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var picked []int
	var err error
	if master == 0 {
		if master, err = l.freePort(true); err != nil {
			return 0, 0, nil, fmt.Errorf("pick MASTER_PORT: %w", err)
		}
		picked = append(picked, master, master+1)
	}
	l.ports[master] = true
	if worker == 0 {
		if worker, err = l.freePort(false); err != nil {
			delete(l.ports, master)
			netport.Release(picked...)
			return 0, 0, nil, fmt.Errorf("pick WORKER_PORT: %w", err)
		}
		picked = append(picked, worker)
	}
	l.ports[worker] = true
	return master, worker, picked, nil
}

// releasePorts hands back a finished gang's ports: those it named, and those picked for it.
func (l *Launcher) releasePorts(picked []int, ports ...int) {
	l.mu.Lock()
	for _, p := range ports {
		delete(l.ports, p)
	}
	l.mu.Unlock()
	netport.Release(picked...)
}

// freePort picks a free port no running gang holds (see netport.Pick), optionally one whose
// successor is free as well. l.mu is held.
func (l *Launcher) freePort(withNext bool) (int, error) {
	return netport.Pick(withNext, func(p int) bool { return l.ports[p] })
}
