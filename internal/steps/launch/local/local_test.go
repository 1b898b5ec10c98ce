package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/steps/launch"

	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/test/testbin"
)

// trainerBinary builds gangboost-train once for the package's tests.
func trainerBinary(t *testing.T) string { return testbin.Built(t, "./components/xgboost-trainer") }

// TestMain removes the trainer the tests built.
func TestMain(m *testing.M) { testbin.Main(m) }

func irisJob(name string, flags ...string) *launch.Job {
	return &launch.Job{
		Name: name, Namespace: "local", Identity: launch.Identity{RunID: "run-1", TaskName: "train"},
		Workers: 1, Data: launch.Data{Dataset: "iris"},
		TrainerFlags: append([]string{"--num-round", "5"}, flags...),
		Claim:        "local", ModelName: "iris", ModelVersion: "v1",
	}
}

// syncBuffer is a bytes.Buffer safe for the launcher's and the replicas' concurrent writes.
type syncBuffer = syncbuf.Buffer

func TestIrisGangTrains(t *testing.T) {
	root := t.TempDir()
	b := &Backend{Trainer: trainerBinary(t), Root: root}
	job := irisJob("iris-ok")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	st, err := b.Start(ctx, job)
	if err != nil || st.Adopted || !st.EndsWithStep {
		t.Fatalf("Start = %+v, %v; want a new job that ends with the step", st, err)
	}
	// A retry of the step in this process gets the same gang back.
	again, err := b.Start(ctx, job)
	if err != nil || !again.Adopted || !again.Created.Equal(st.Created) {
		t.Fatalf("second Start = %+v, %v; want the running job adopted", again, err)
	}
	other := irisJob("iris-ok")
	other.Identity.RunID = "run-2"
	if _, err := b.Start(ctx, other); err == nil || !strings.Contains(err.Error(), "refusing to adopt") {
		t.Fatalf("Start of another step's job = %v, want a refusal", err)
	}

	var (
		mu      sync.Mutex
		started bool
		lines   []string
	)
	err = b.Watch(ctx, job, func(p launch.Progress) {
		mu.Lock()
		defer mu.Unlock()
		started = started || p.GangStarted
		if p.Line != "" {
			lines = append(lines, p.Line)
		}
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if !started {
		t.Errorf("no progress said the gang started; lines:\n%s", strings.Join(lines, "\n"))
	}
	rounds := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "master-0: ") && strings.Contains(l, "msg=round") {
			rounds++
		}
	}
	if rounds == 0 {
		t.Errorf("no round lines in progress:\n%s", strings.Join(lines, "\n"))
	}
	entries, err := os.ReadDir(filepath.Join(root, "models", "iris", "v1"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("model folder models/iris/v1: %v entries, %v", len(entries), err)
	}
	if err := b.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := b.Watch(ctx, job, func(launch.Progress) {}); err == nil {
		t.Error("Watch after Delete succeeded; want the job gone")
	}
}

// The launcher drives the backend end to end, as the launch component does.
func TestLauncherRunsLocalGang(t *testing.T) {
	root := t.TempDir()
	log := &syncBuffer{}
	l := &launch.Launcher{Backend: &Backend{Trainer: trainerBinary(t), Root: root}, Log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := l.Run(ctx, irisJob("iris-launcher"))
	if err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log)
	}
	if res.Adopted {
		t.Error("a new job was reported adopted")
	}
	if _, err := os.Stat(filepath.Join(root, "models", "iris", "v1")); err != nil {
		t.Fatalf("model folder: %v\nlog:\n%s", err, log)
	}
}

func TestBadTrainerFlagFailsNamingTheRank(t *testing.T) {
	root := t.TempDir()
	replicaLog := &syncBuffer{}
	b := &Backend{Trainer: trainerBinary(t), Root: root, Log: replicaLog}
	job := irisJob("iris-bad", "--no-such-flag")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := b.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	err := b.Watch(ctx, job, func(launch.Progress) {})
	var fe *launch.FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("Watch = %v, want a *launch.FailedError", err)
	}
	if fe.Job != "iris-bad" || !strings.Contains(fe.Reason, "(rank ") || !strings.Contains(fe.Reason, "exited with code 2") {
		t.Errorf("FailedError %+v: want the failing replica, its rank and exit code 2", fe)
	}
	if len(fe.Pods) != 1 || !strings.Contains(fe.Pods[0], "no-such-flag") {
		t.Errorf("FailedError.Pods = %q, want the failing replica's log tail naming the flag", fe.Pods)
	}
	if !strings.Contains(replicaLog.String(), "[master-0] ") {
		t.Errorf("replica log lines missing from Backend.Log:\n%s", replicaLog)
	}
	if err := b.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
}

func TestStartChecksTrainerAndRoot(t *testing.T) {
	ctx := context.Background()
	if _, err := (&Backend{Trainer: filepath.Join(t.TempDir(), "missing"), Root: t.TempDir()}).Start(ctx, irisJob("x")); err == nil || !strings.Contains(err.Error(), "trainer") {
		t.Errorf("missing trainer: %v", err)
	}
	if _, err := (&Backend{Trainer: "true", Root: filepath.Join(t.TempDir(), "nope")}).Start(ctx, irisJob("x")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("missing root: %v", err)
	}
	if err := (&Backend{}).Watch(ctx, irisJob("x"), func(launch.Progress) {}); err == nil || !strings.Contains(err.Error(), "not running in this process") {
		t.Errorf("Watch of an unknown job: %v", err)
	}
}

// TestDeleteStopsTheGang: Delete stops a running gang by SIGTERM, which the trainer obeys at
// once: the termination grace period (the wait before SIGKILL) is far longer than the test's hang
// guard, so Delete returns before the guard only if the replicas exited on the SIGTERM itself.
func TestDeleteStopsTheGang(t *testing.T) {
	root := t.TempDir()
	b := &Backend{Trainer: trainerBinary(t), Root: root, TerminationGracePeriod: 10 * time.Minute}
	job := irisJob("iris-delete")
	job.TrainerFlags = []string{"--num-round", "100000"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the hang guard
	defer cancel()
	if _, err := b.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	rounds := make(chan struct{}, 1)
	watched := make(chan error, 1)
	go func() {
		watched <- b.Watch(ctx, job, func(p launch.Progress) {
			if strings.Contains(p.Line, "msg=round") {
				select {
				case rounds <- struct{}{}:
				default:
				}
			}
		})
	}()
	select {
	case <-rounds:
	case err := <-watched:
		t.Fatalf("the job ended before it was deleted: %v", err)
	}
	start := time.Now()
	if err := b.Delete(ctx, job); err != nil {
		t.Fatalf("Delete: %v (the replicas did not exit on SIGTERM)", err)
	}
	t.Logf("Delete took %s", time.Since(start).Round(time.Millisecond))
	var fe *launch.FailedError
	if err := <-watched; !errors.As(err, &fe) || !strings.Contains(fe.Reason, "deleted while running") {
		t.Errorf("Watch of the deleted job = %v, want a *launch.FailedError saying it was deleted", err)
	}
}

// replicaPid is the pid of this process's child whose environment holds RANK=rank and whose
// command line holds marker: a replica of a local gang this test started.
func replicaPid(rank int, marker string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		if strings.Contains(string(cmdline), marker) && slices.Contains(strings.Split(string(env), "\x00"), "RANK="+strconv.Itoa(rank)) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			return pid
		}
	}
	return 0
}

// TestRestartedGangResumes: with restart_policy OnFailure, a job whose Worker is killed after a
// checkpoint restarts its gang, which resumes from that checkpoint; the launcher's progress says
// so, and the model's metadata records the round.
func TestRestartedGangResumes(t *testing.T) {
	root := t.TempDir()
	replicaLog := &syncBuffer{}
	b := &Backend{Trainer: trainerBinary(t), Root: root, Log: replicaLog, GracePeriod: 5 * time.Second}
	job := irisJob("iris-resume")
	job.ModelName = "iris-resume"
	job.TrainerFlags = []string{"--num-round", "3000", "--max-depth", "2", "--objective", "multi:softprob",
		"--checkpoint-every-rounds", "300", "--gang-timeout", "3s"}
	backoff := int32(3) // one restart of the Master and the Worker (2) stays below it
	job.RestartPolicy, job.BackoffLimit = launch.RestartOnFailure, &backoff
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := b.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		lines []string
	)
	watched := make(chan error, 1)
	go func() {
		watched <- b.Watch(ctx, job, func(p launch.Progress) {
			mu.Lock()
			lines = append(lines, p.Line)
			mu.Unlock()
		})
	}()
	for !strings.Contains(replicaLog.String(), `msg="checkpoint written"`) {
		select {
		case err := <-watched:
			t.Fatalf("the job ended before its first checkpoint: %v\n%s", err, replicaLog)
		case <-time.After(10 * time.Millisecond):
		}
	}
	pid := replicaPid(1, "iris-resume")
	if pid == 0 {
		t.Fatal("the Worker's process not found")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-watched; err != nil {
		t.Fatalf("Watch = %v, want the restarted gang to succeed\n%s", err, replicaLog)
	}
	mu.Lock()
	progress := strings.Join(lines, "\n")
	mu.Unlock()
	m := regexp.MustCompile(`master-0: .*msg="resumed from checkpoint at round (\d+)"`).FindStringSubmatch(progress)
	if m == nil || !strings.Contains(progress, "gang iris-resume restarting (restart 1, 2 of backoff limit 3 replica restarts)") {
		t.Fatalf("progress does not report the restart and the resume:\n%s", progress)
	}
	md, err := modeldir.ReadMetadata(filepath.Join(root, "models", "iris-resume", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := strconv.Atoi(m[1]); k%300 != 0 || len(md.ResumedAt) != 1 || md.ResumedAt[0] != k || md.Rounds != 3000 {
		t.Errorf("resumed at round %s; metadata resumed_at %v, rounds %d", m[1], md.ResumedAt, md.Rounds)
	}
}
