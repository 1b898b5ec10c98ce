// Package local is the launcher's local backend: it runs a launch.Job as a gang of
// gangboost-train processes on this machine (a Master and N Workers, all together or not at
// all, with the environment the Training Operator v1 injects) through package localgang, with a
// local directory standing in for the job's PersistentVolumeClaim.
//
// Adoption is not meaningful locally: processes do not outlive the launcher, so a retried step in
// a new process always starts a new gang. Start on a job this Backend is already running returns
// that job as adopted instead of starting a second gang.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/training/localgang"
)

// exitLost is gangboost-train's exit code when another rank of the gang was lost: a consequence,
// never the cause, of a gang's failure.
const exitLost = 3

// A FailedError carries a failing replica's first logHeadLines log lines (where a usage error
// is, before the flag list) and its last logTailLines (where a failure in training is).
const (
	logHeadLines = 5
	logTailLines = 20
)

// Backend runs jobs as local process gangs. Its zero value is not usable: Trainer and Root must
// be set.
type Backend struct {
	// Trainer is the gangboost-train executable: a path, or a name looked up in PATH.
	Trainer string
	// Root is the directory standing in for the job's claim: the trainer reads data and writes
	// the model folder under it, at the same relative paths as on the claim.
	Root string
	// Gangs runs the gangs; nil uses one Launcher with localgang's default slots.
	Gangs *localgang.Launcher
	// Log, when set, receives every replica's log lines ("[master-0] ...").
	Log io.Writer
	// GracePeriod and TerminationGracePeriod are localgang.Job's; 0 means localgang's defaults.
	GracePeriod, TerminationGracePeriod time.Duration

	mu   sync.Mutex
	runs map[string]*run
}

// run is one gang started by Start, followed by Watch and stopped by Delete.
type run struct {
	id      launch.Identity
	created time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when the gang has ended; res and err are set then

	// Guarded by mu, as is everything after it.
	res     *localgang.Result
	err     error
	deleted bool // Delete stopped the gang

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever events grows
	events  []launch.Progress
	logs    map[string]*replicaLog
}

// replicaLog is the head and tail of one replica's log.
type replicaLog struct {
	head, tail []string
	skipped    int
}

func (l *replicaLog) add(line string) {
	if len(l.head) < logHeadLines {
		l.head = append(l.head, line)
		return
	}
	l.tail = append(l.tail, line)
	if len(l.tail) > logTailLines {
		l.tail = l.tail[1:]
		l.skipped++
	}
}

func (l *replicaLog) String() string {
	lines := l.head
	if l.skipped > 0 {
		lines = append(lines[:len(lines):len(lines)], fmt.Sprintf("... (%d lines)", l.skipped))
	}
	return strings.Join(append(lines[:len(lines):len(lines)], l.tail...), "\n")
}

func key(j *launch.Job) string { return j.Namespace + "/" + j.Name }

// Start starts the job's gang, or returns the gang of the same job this Backend already runs or
// ran (Adopted). A job of that name started for another step is refused.
func (b *Backend) Start(ctx context.Context, j *launch.Job) (launch.Started, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.runs[key(j)]; ok {
		if r.id != j.Identity {
			return launch.Started{}, fmt.Errorf("local job %s is running for %s, not %s: refusing to adopt it; delete it or rename the task", j.Name, r.id, j.Identity)
		}
		return launch.Started{Adopted: true, Created: r.created, EndsWithStep: true}, nil
	}
	if b.Trainer == "" || b.Root == "" {
		return launch.Started{}, errors.New("local backend: Trainer (the gangboost-train executable) and Root (the directory standing in for the claim) must be set")
	}
	trainer, err := exec.LookPath(b.Trainer)
	if err != nil {
		return launch.Started{}, fmt.Errorf("local job %s: trainer: %w", j.Name, err)
	}
	root, err := filepath.Abs(b.Root)
	if err != nil {
		return launch.Started{}, fmt.Errorf("local job %s: claim directory %s: %w", j.Name, b.Root, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return launch.Started{}, fmt.Errorf("local job %s: claim directory %s is not a directory (%v)", j.Name, root, err)
	}
	args, err := j.TrainerArgs(root)
	if err != nil {
		return launch.Started{}, fmt.Errorf("local job %s: %w", j.Name, err)
	}
	gangs := b.Gangs
	if gangs == nil {
		gangs = &localgang.Launcher{}
		b.Gangs = gangs
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &run{id: j.Identity, created: time.Now(), cancel: cancel, done: make(chan struct{}),
		changed: make(chan struct{}), logs: map[string]*replicaLog{}}
	lj := localgang.Job{
		Name:    j.Name,
		Command: trainer,
		// The same command line the Kubernetes backend gives the pods, with Root as the claim.
		Args:    args,
		Workers: int(j.Workers),
		// The replicas share the loopback interface: a fixed MASTER_PORT (job.Port) would clash
		// between gangs, so localgang picks free ports.
		Dir:                    root,
		Env:                    replicaEnv(j.Resources.CPU),
		Stdout:                 &lineWriter{line: func(s string) { r.line(s, b.Log) }},
		Waiting:                func(why string) { r.add(launch.Progress{Waiting: why}) },
		Started:                func() { r.add(launch.Progress{GangStarted: true}) },
		GracePeriod:            b.GracePeriod,
		TerminationGracePeriod: b.TerminationGracePeriod,
		PeerLostExitCode:       exitLost,
	}
	if j.RestartPolicy == launch.RestartOnFailure {
		// As the Training Operator: no backoff limit means no limit.
		lj.RestartPolicy, lj.BackoffLimit = localgang.RestartOnFailure, math.MaxInt32
		if j.BackoffLimit != nil {
			lj.BackoffLimit = int(*j.BackoffLimit)
		}
	}
	if b.runs == nil {
		b.runs = map[string]*run{}
	}
	b.runs[key(j)] = r
	go func() {
		res, err := gangs.Run(runCtx, lj)
		r.mu.Lock()
		r.res, r.err = res, err
		r.mu.Unlock()
		close(r.done)
	}()
	return launch.Started{Created: r.created, EndsWithStep: true}, nil
}

// Watch reports the gang's progress (waiting for slots, started, the Master's rounds) until it
// ends: nil when every replica succeeded, a *launch.FailedError naming the failing replica and
// rank otherwise.
func (b *Backend) Watch(ctx context.Context, j *launch.Job, progress func(launch.Progress)) error {
	b.mu.Lock()
	r, ok := b.runs[key(j)]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("local job %s is not running in this process (local jobs cannot be adopted across processes)", j.Name)
	}
	seen := 0
	report := func() <-chan struct{} {
		r.mu.Lock()
		evs, ch := r.events[seen:], r.changed
		seen = len(r.events)
		r.mu.Unlock()
		for _, p := range evs {
			progress(p)
		}
		return ch
	}
	for {
		ch := report()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.done:
			report()
			return r.failure(j)
		case <-ch:
		}
	}
}

// Delete stops the job's replicas (SIGTERM, then SIGKILL after the termination grace period),
// waits for them and forgets the job. Deleting an unknown job is not an error.
func (b *Backend) Delete(ctx context.Context, j *launch.Job) error {
	b.mu.Lock()
	r, ok := b.runs[key(j)]
	b.mu.Unlock()
	if !ok {
		return nil
	}
	r.mu.Lock()
	r.deleted = true
	r.mu.Unlock()
	r.cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
		return fmt.Errorf("delete local job %s: replicas still stopping: %w", j.Name, ctx.Err())
	}
	b.mu.Lock()
	if b.runs[key(j)] == r {
		delete(b.runs, key(j))
	}
	b.mu.Unlock()
	return nil
}

// line records one log line of the gang: a replica's ("[name] text") or the launcher's own.
func (r *run) line(s string, log io.Writer) {
	if log != nil {
		fmt.Fprintln(log, s)
	}
	name, text, ok := replicaLine(s)
	if !ok {
		r.add(launch.Progress{Line: s})
		return
	}
	r.mu.Lock()
	l := r.logs[name]
	if l == nil {
		l = &replicaLog{}
		r.logs[name] = l
	}
	l.add(text)
	r.mu.Unlock()
	// The Master's slog lines for each boosting round, and where a restarted gang resumed, are
	// the job's progress.
	if name == localgang.ReplicaName(0) && (strings.Contains(text, " msg=round ") || strings.Contains(text, ` msg="resumed from checkpoint`)) {
		r.add(launch.Progress{Line: name + ": " + text})
	}
}

// add records a progress event for Watch.
func (r *run) add(p launch.Progress) {
	r.mu.Lock()
	r.events = append(r.events, p)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// replicaLine splits "[master-0] text".
func replicaLine(s string) (name, text string, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return "", "", false
	}
	name, text, ok = strings.Cut(s[1:], "] ")
	return name, text, ok
}

// failure is the ended gang's outcome as the launcher wants it.
func (r *run) failure(j *launch.Job) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	fe := &launch.FailedError{Job: j.Name, Reason: r.err.Error()}
	if r.deleted {
		fe.Reason = "deleted while running: " + fe.Reason
		return fe
	}
	var re *localgang.ReplicaError
	if errors.As(r.err, &re) {
		fe.Reason = re.Error()
		desc := re.Error()
		if l := r.logs[re.Replica]; l != nil {
			desc += "\nlog:\n" + l.String()
		}
		fe.Pods = []string{desc}
	}
	return fe
}

// lineWriter calls line for every whole line written; localgang writes whole lines.
type lineWriter struct {
	line func(string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		w.line(l)
	}
	return len(b), nil
}

// replicaEnv is the replicas' environment: this process's, with OpenMP's threads per replica set
// to the replica's CPU (as a pod's CPU limit bounds it), unless OMP_NUM_THREADS is set already.
// Without it every rank of a local gang starts one OpenMP thread per core and spins them: on a
// 2-core machine a 3-rank gang then takes seconds per round instead of milliseconds.
func replicaEnv(cpu string) []string {
	env := os.Environ()
	if _, ok := os.LookupEnv("OMP_NUM_THREADS"); ok {
		return env
	}
	threads := 1
	if q, err := resource.ParseQuantity(cpu); err == nil {
		threads = max(1, int(q.Value())) // Value rounds up: 500m is 1 thread, 2 is 2
	}
	return append(env, "OMP_NUM_THREADS="+strconv.Itoa(threads))
}
