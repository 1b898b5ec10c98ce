package localgang

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/training/gangenv"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
)

// The replicas in these tests are this test binary, started again in a helper mode chosen by
// LOCALGANG_HELPER; its arguments say what the replica does.
func TestMain(m *testing.M) {
	if os.Getenv("LOCALGANG_HELPER") == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helper(args []string) int {
	rank := os.Getenv("RANK")
	mark := func(dir, what string) {
		stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := os.WriteFile(filepath.Join(dir, "rank-"+rank+"."+what), []byte(stamp), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
	}
	forever := func() int {
		for {
			time.Sleep(time.Hour)
		}
	}
	switch args[0] {
	case "env": // env DIR: write the environment, one variable a line, in order
		os.WriteFile(filepath.Join(args[1], "rank-"+rank+".env"), []byte(strings.Join(os.Environ(), "\n")), 0o644)
		return 0
	case "log": // stdout and stderr lines, a line longer than the pipe reader's buffer, no final newline
		fmt.Printf("hello from rank %s\n", rank)
		fmt.Fprintf(os.Stderr, "warning from rank %s\r\n", rank)
		fmt.Printf("%s\n", strings.Repeat("x", 100<<10))
		fmt.Printf("last words of rank %s", rank)
		return 0
	case "hold": // hold DIR DURATION: mark start, run for DURATION, mark end
		mark(args[1], "start")
		d, _ := time.ParseDuration(args[2])
		time.Sleep(d)
		mark(args[1], "end")
		return 0
	case "hold-until": // hold-until DIR RELEASE: mark start, run until the file RELEASE exists, mark end
		mark(args[1], "start")
		for !fileExists(args[2]) {
			time.Sleep(10 * time.Millisecond)
		}
		mark(args[1], "end")
		return 0
	case "fail": // fail DIR RANK CODE [OTHERS]: rank RANK exits with CODE once every rank has started;
		// the others run until stopped, or with OTHERS=exit exit 1 on their own 100 ms later.
		mark(args[1], "start")
		waitForMarks(args[1], "start", os.Getenv("WORLD_SIZE"))
		if rank == args[2] {
			os.WriteFile(filepath.Join(args[1], "failing.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			code, _ := strconv.Atoi(args[3])
			return code
		}
		if len(args) > 4 && args[4] == "exit" {
			// Exit only once the launcher has reaped the failing rank, so its failure comes first.
			for {
				raw, err := os.ReadFile(filepath.Join(args[1], "failing.pid"))
				pid, _ := strconv.Atoi(string(raw))
				if err == nil && pid > 0 && syscall.Kill(pid, 0) != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			return 1
		}
		return forever()
	case "lost": // lost DIR REPORTER VICTIM: once every rank has started, REPORTER exits 3 as if it
		// had seen VICTIM go; VICTIM then dies by SIGKILL, after the launcher reaped REPORTER.
		mark(args[1], "start")
		waitForMarks(args[1], "start", os.Getenv("WORLD_SIZE"))
		switch rank {
		case args[2]:
			os.WriteFile(filepath.Join(args[1], "failing.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			return 3
		case args[3]:
			for {
				raw, err := os.ReadFile(filepath.Join(args[1], "failing.pid"))
				pid, _ := strconv.Atoi(string(raw))
				if err == nil && pid > 0 && syscall.Kill(pid, 0) != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Half a second after REPORTER was reaped: the launcher has recorded its exit by then,
			// unless the machine held it that long.
			time.Sleep(500 * time.Millisecond)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return forever()
	case "flaky": // flaky DIR VICTIM once|always: VICTIM dies by SIGKILL once every rank has
		// started and the others then exit 3, as trainers that lost a rank; with "once", a gang
		// started again after that (DIR/failed exists) succeeds.
		again := fileExists(filepath.Join(args[1], "failed"))
		mark(args[1], "start")
		if again && args[3] == "once" {
			return 0
		}
		if rank == args[2] {
			waitForMarks(args[1], "start", os.Getenv("WORLD_SIZE"))
			os.WriteFile(filepath.Join(args[1], "failed.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			os.WriteFile(filepath.Join(args[1], "failed"), nil, 0o644)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		for {
			raw, err := os.ReadFile(filepath.Join(args[1], "failed.pid"))
			pid, _ := strconv.Atoi(string(raw))
			if err == nil && pid > 0 && syscall.Kill(pid, 0) != nil {
				return 3
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "run": // run DIR: mark start, run until stopped
		mark(args[1], "start")
		return forever()
	case "ignore-term": // ignore-term DIR: like run, but SIGTERM does not stop it
		signal.Ignore(syscall.SIGTERM)
		mark(args[1], "start")
		return forever()
	case "spawn": // spawn DIR: start a child process of our own, then run until stopped
		child := exec.Command("sleep", "1000")
		if err := child.Start(); err != nil {
			return 98
		}
		os.WriteFile(filepath.Join(args[1], "rank-"+rank+".child"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		mark(args[1], "start")
		return forever()
	}
	return 97
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func waitForMarks(dir, what, world string) {
	n, _ := strconv.Atoi(world)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "*."+what))
		if len(m) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitMarks waits in the test for n marks.
func waitMarks(t *testing.T, dir, what string, n int) {
	t.Helper()
	// A hang guard: replicas start in well under a second even on a loaded machine.
	const guard = time.Minute
	deadline := time.Now().Add(guard)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "*."+what))
		if len(m) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d %q marks after %s", len(m), n, what, guard)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readMark(t *testing.T, dir string, rank int, what string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.%s", rank, what)))
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := strconv.ParseInt(string(b), 10, 64)
	return time.Unix(0, ns)
}

// syncBuffer is a log destination the test may read while a gang writes.
type syncBuffer = syncbuf.Buffer

func helperJob(name string, workers int, logs *syncBuffer, args ...string) Job {
	return Job{
		Name: name, Command: os.Args[0], Args: args, Workers: workers, Stdout: logs,
		Env: append(os.Environ(), "LOCALGANG_HELPER=1"),
		// A minute for a replica to end on SIGTERM: a busy machine may not run one for a while,
		// and these replicas end at once unless one ignores SIGTERM on purpose.
		GracePeriod: 300 * time.Millisecond, TerminationGracePeriod: time.Minute,
	}
}

func TestEnvAsTheOperatorSetsIt(t *testing.T) {
	tests := []struct {
		workers    int
		masterPort int
	}{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {1, 29999}}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("workers=%d,port=%d", tc.workers, tc.masterPort), func(t *testing.T) {
			dir := t.TempDir()
			j := helperJob("envjob", tc.workers, &syncBuffer{}, "env", dir)
			j.MasterPort = tc.masterPort
			// Stale distributed settings in the base environment must not reach the replicas.
			j.Env = append(j.Env, "MASTER_ADDR=stale-master-0", "RANK=7", "PYTHONUNBUFFERED=0",
				"DMLC_TRACKER_URI=10.0.0.1", "DMLC_TASK_ID=3", "KEEP_ME=yes")
			l := &Launcher{Slots: 4}
			res, err := l.Run(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			if tc.masterPort != 0 && res.MasterPort != tc.masterPort {
				t.Errorf("MasterPort %d, want %d", res.MasterPort, tc.masterPort)
			}
			world := tc.workers + 1
			for rank := 0; rank < world; rank++ {
				raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.env", rank)))
				if err != nil {
					t.Fatal(err)
				}
				env := strings.Split(string(raw), "\n")
				want := []string{
					"MASTER_PORT=" + strconv.Itoa(res.MasterPort),
					"MASTER_ADDR=127.0.0.1",
					"WORLD_SIZE=" + strconv.Itoa(world),
					"RANK=" + strconv.Itoa(rank),
					"PYTHONUNBUFFERED=1",
				}
				if world > 1 {
					addrs := strings.TrimSuffix(strings.Repeat("127.0.0.1,", tc.workers), ",")
					want = append(want, "WORKER_PORT="+strconv.Itoa(res.WorkerPort), "WORKER_ADDRS="+addrs)
				}
				// The operator appends its variables to the container env, in this order.
				if got := env[len(env)-len(want):]; !slices.Equal(got, want) {
					t.Errorf("rank %d: env ends with\n%q\nwant\n%q", rank, got, want)
				}
				for _, kv := range env[:len(env)-len(want)] {
					key, _, _ := strings.Cut(kv, "=")
					if gangenv.IsKey(key) {
						t.Errorf("rank %d: inherited %s reached the replica", rank, kv)
					}
				}
				if !slices.Contains(env, "KEEP_ME=yes") {
					t.Errorf("rank %d: base env variable KEEP_ME lost", rank)
				}
			}
			if res.MasterPort == res.WorkerPort || res.MasterPort == 0 {
				t.Errorf("ports: master %d worker %d", res.MasterPort, res.WorkerPort)
			}
		})
	}
}

func TestLogPrefixes(t *testing.T) {
	logs := &syncBuffer{}
	res, err := (&Launcher{Slots: 4}).Run(context.Background(), helperJob("logjob", 2, logs, "log"))
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for rank := range 3 {
		p := "[" + ReplicaName(rank) + "] "
		for _, want := range []string{
			fmt.Sprintf("%shello from rank %d\n", p, rank),
			fmt.Sprintf("%swarning from rank %d\n", p, rank),
			fmt.Sprintf("%slast words of rank %d\n", p, rank),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q", want)
			}
		}
		if res.Replicas[rank].ExitCode != 0 || res.Replicas[rank].Name != ReplicaName(rank) || res.Replicas[rank].Rank != rank {
			t.Errorf("replica %d: %+v", rank, res.Replicas[rank])
		}
	}
	// Every line is whole: a prefix, or a launcher line; the 100 KiB line arrives in pieces,
	// each prefixed, and no piece of one replica's line is glued to another's.
	xs := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "gang logjob "):
		case strings.HasPrefix(line, "[master-0] "), strings.HasPrefix(line, "[worker-0] "), strings.HasPrefix(line, "[worker-1] "):
			_, text, _ := strings.Cut(line, "] ")
			if strings.Trim(text, "x") == "" {
				xs += len(text)
			} else if strings.Contains(text, "x") {
				t.Errorf("mixed line %.80q", line)
			}
		default:
			t.Errorf("line without prefix: %.80q", line)
		}
	}
	if xs != 3*100<<10 {
		t.Errorf("long lines: %d x's arrived, want %d", xs, 3*100<<10)
	}
	if !strings.Contains(out, "gang logjob started: master-0 and 2 workers, MASTER_ADDR=127.0.0.1") {
		t.Errorf("no start line in\n%.300s", out)
	}
}

func TestFirstFailureStopsTheGang(t *testing.T) {
	dir := t.TempDir()
	logs := &syncBuffer{}
	j := helperJob("failjob", 2, logs, "fail", dir, "1", "3")
	res, err := (&Launcher{Slots: 4}).Run(context.Background(), j)
	const want = "gang failjob failed: worker-0 (rank 1) exited with code 3"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	var re *ReplicaError
	if !errors.As(err, &re) || re.Replica != "worker-0" || re.Rank != 1 || re.ExitCode != 3 {
		t.Fatalf("ReplicaError %+v", re)
	}
	failed := res.Replicas[1]
	failedAt := failed.Started.Add(failed.Duration)
	if failed.ExitCode != 3 || failed.Killed {
		t.Errorf("worker-0: %+v", failed)
	}
	for _, rank := range []int{0, 2} {
		r := res.Replicas[rank]
		if !r.Killed || r.Signal != syscall.SIGTERM || r.ExitCode != -1 {
			t.Errorf("%s: %+v; want stopped by SIGTERM", r.Name, r)
		}
		// They had the grace period to exit on their own before being stopped.
		if end := r.Started.Add(r.Duration); end.Sub(failedAt) < j.GracePeriod {
			t.Errorf("%s stopped %s after the failure, before the %s grace period", r.Name, end.Sub(failedAt), j.GracePeriod)
		}
	}
	out := logs.String()
	for _, line := range []string{
		"gang failjob: worker-0 (rank 1) exited with code 3; the others have 300ms to exit",
		"gang failjob: grace period after worker-0 (rank 1) exited with code 3 is over: stopping master-0, worker-1 (SIGTERM, SIGKILL after 1m0s)",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("log lacks %q:\n%s", line, out)
		}
	}
}

// A replica that reports a lost peer (exit PeerLostExitCode) may be reaped before the peer it saw
// go: the error still names the lost one.
func TestErrorNamesTheLostReplicaNotTheReporter(t *testing.T) {
	cases := []struct {
		name     string
		lostCode int
		want     string
	}{
		{"lost exit code known", 3, "gang lostjob failed: worker-1 (rank 2) was killed by SIGKILL"},
		{"lost exit code unknown", 0, "gang lostjob failed: worker-0 (rank 1) exited with code 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncBuffer{}
			j := helperJob("lostjob", 2, logs, "lost", t.TempDir(), "1", "2")
			j.GracePeriod = 5 * time.Second
			j.PeerLostExitCode = c.lostCode
			_, err := (&Launcher{Slots: 3}).Run(context.Background(), j)
			if err == nil || err.Error() != c.want {
				t.Fatalf("error %v, want %q\n%s", err, c.want, logs.String())
			}
		})
	}
}

// TestOthersExitOnTheirOwnWithinGrace: once every replica has exited, Run returns without waiting
// out the grace period. The grace period is far longer than the hang guard, so Run returning the
// first failure (rather than the guard's cancellation) shows it did not wait.
func TestOthersExitOnTheirOwnWithinGrace(t *testing.T) {
	dir := t.TempDir()
	j := helperJob("selfexit", 3, &syncBuffer{}, "fail", dir, "3", "5", "exit")
	j.GracePeriod = 10 * time.Minute
	// The others' exit 1 counts as a consequence, so the error names worker-2 in whatever order
	// a busy machine reaps the exits.
	j.PeerLostExitCode = 1
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the hang guard
	defer cancel()
	start := time.Now()
	res, err := (&Launcher{Slots: 4}).Run(ctx, j)
	if err == nil || err.Error() != "gang selfexit failed: worker-2 (rank 3) exited with code 5" {
		t.Fatalf("error %v: want the first failure, worker-2's (a cancellation means Run waited out the grace period)", err)
	}
	t.Logf("Run took %s", time.Since(start).Round(time.Millisecond))
	for rank := range 3 {
		if r := res.Replicas[rank]; r.Killed || r.ExitCode != 1 {
			t.Errorf("%s: %+v; want exit 1 on its own", r.Name, r)
		}
	}
}

func TestImmediateStopWithNegativeGrace(t *testing.T) {
	dir := t.TempDir()
	j := helperJob("nograce", 1, &syncBuffer{}, "fail", dir, "0", "2")
	j.GracePeriod = -1
	res, err := (&Launcher{Slots: 4}).Run(context.Background(), j)
	if err == nil || err.Error() != "gang nograce failed: master-0 (rank 0) exited with code 2" {
		t.Fatalf("error %v", err)
	}
	if r := res.Replicas[1]; !r.Killed || r.Signal != syscall.SIGTERM {
		t.Errorf("worker-0: %+v", r)
	}
}

func TestCancelStopsEveryReplicaAndItsChildren(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res *Result
	var err error
	go func() {
		defer close(done)
		res, err = (&Launcher{Slots: 4}).Run(ctx, helperJob("canceljob", 2, &syncBuffer{}, "spawn", dir))
	}()
	waitMarks(t, dir, "start", 3)
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) || err.Error() != "gang canceljob canceled: context canceled" {
		t.Fatalf("error %v, want canceled", err)
	}
	for rank := range 3 {
		r := res.Replicas[rank]
		if !r.Killed || r.Signal != syscall.SIGTERM {
			t.Errorf("%s: %+v", r.Name, r)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.child", rank)))
		pid, _ := strconv.Atoi(string(raw))
		if pid == 0 {
			t.Fatalf("rank %d wrote no child pid", rank)
		}
		if processAlive(pid) {
			t.Errorf("%s's child process %d survived the gang", r.Name, pid)
		}
	}
}

// processAlive reports whether pid still runs (procgroup.Alive: a zombie waiting for init to reap
// it does not) after the kernel has had its time to tear a killed process down: it polls for up to
// 30 s, a hang detector, so that a slow teardown on a loaded machine is not taken for a survivor.
func processAlive(pid int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for procgroup.Alive(pid) {
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestSIGKILLAfterTerminationGrace(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitMarks(t, dir, "start", 2)
		cancel()
	}()
	j := helperJob("stubborn", 1, &syncBuffer{}, "ignore-term", dir)
	j.TerminationGracePeriod = 300 * time.Millisecond
	res, err := (&Launcher{Slots: 4}).Run(ctx, j)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	for _, r := range res.Replicas {
		if r.Signal != syscall.SIGKILL || r.Duration < 300*time.Millisecond {
			t.Errorf("%s: %+v; want SIGKILL after the 300ms termination grace", r.Name, r)
		}
	}
}

func TestBadCommandStartsNothing(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data.txt")
	os.WriteFile(notExec, []byte("x"), 0o644)
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"missing program", Job{Name: "a", Command: "/nonexistent/gangboost-train"},
			`gang a: command "/nonexistent/gangboost-train": exec: "/nonexistent/gangboost-train": stat /nonexistent/gangboost-train: no such file or directory`},
		{"not in PATH", Job{Name: "b", Command: "no-such-trainer-xyz"},
			`gang b: command "no-such-trainer-xyz": exec: "no-such-trainer-xyz": executable file not found in $PATH`},
		{"not executable", Job{Name: "c", Command: notExec},
			fmt.Sprintf(`gang c: command %q: exec: %q: permission denied`, notExec, notExec)},
		{"relative to Dir", Job{Name: "d", Command: "./data.txt", Dir: dir},
			fmt.Sprintf(`gang d: command %q: exec: %q: permission denied`, notExec, notExec)},
		{"missing Dir", Job{Name: "e", Command: "true", Dir: filepath.Join(dir, "nope")},
			fmt.Sprintf(`gang e: working directory: stat %s: no such file or directory`, filepath.Join(dir, "nope"))},
		{"no command", Job{Name: "f"}, "gang f: no command given"},
		{"negative workers", Job{Name: "g", Command: "true", Workers: -1}, "gang g: -1 workers: want 0 or more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			tc.job.Stdout = logs
			res, err := (&Launcher{Slots: 4}).Run(context.Background(), tc.job)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.want)
			}
			if res != nil || logs.String() != "" {
				t.Errorf("something started: result %+v, log %q", res, logs.String())
			}
		})
	}
}

func TestStartFailureKillsStartedReplicas(t *testing.T) {
	dir := t.TempDir()
	beforeStart = func(rank int) error {
		if rank == 2 {
			waitMarks(t, dir, "start", 2) // ranks 0 and 1 run by now
			return errors.New("fork/exec: resource temporarily unavailable")
		}
		return nil
	}
	defer func() { beforeStart = nil }()
	l := &Launcher{Slots: 4}
	res, err := l.Run(context.Background(), helperJob("halfstart", 3, &syncBuffer{}, "run", dir))
	const want = "gang halfstart: start worker-1: fork/exec: resource temporarily unavailable (stopped the 2 replicas already started)"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	for rank := range 2 {
		r := res.Replicas[rank]
		if !r.Killed || r.Signal != syscall.SIGKILL || processAlive(r.Pid) {
			t.Errorf("%s: %+v; want killed", r.Name, r)
		}
	}
	if r := res.Replicas[2]; r.Pid != 0 {
		t.Errorf("worker-1 has pid %d", r.Pid)
	}
	beforeStart = nil
	// The slots came back.
	if _, err := l.Run(context.Background(), helperJob("after", 3, &syncBuffer{}, "log")); err != nil {
		t.Errorf("a gang needing every slot after the failed start: %v", err)
	}
}

func TestTooLargeFailsAtOnce(t *testing.T) {
	logs := &syncBuffer{}
	res, err := (&Launcher{Slots: 2}).Run(context.Background(), helperJob("big", 2, logs, "log"))
	const want = "gang big needs 3 slots (a master and 2 workers) but the launcher has 2: gang larger than the launcher"
	if !errors.Is(err, ErrGangTooLarge) || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	if res != nil || logs.String() != "" {
		t.Errorf("started anyway: %+v %q", res, logs.String())
	}
}

// TestAllOrNothing runs two 3-replica gangs on 4 slots at once: one must wait until the other has
// ended completely, and then start all its replicas together.
func TestAllOrNothing(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	release := filepath.Join(t.TempDir(), "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) }) // lets the replicas end if the test fails first
	logs := &syncBuffer{}
	l := &Launcher{Slots: 4}
	var wg sync.WaitGroup
	results := [2]*Result{}
	errs := [2]error{}
	for i := range 2 {
		wg.Go(func() {
			results[i], errs[i] = l.Run(context.Background(), helperJob(fmt.Sprintf("g%d", i), 2, logs, "hold-until", dirs[i], release))
		})
	}
	// The gang that got the slots holds them until one of the two is seen waiting.
	waitLog(t, logs, " waiting: ")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("gang g%d: %v", i, err)
		}
	}
	span := func(dir string) (firstStart, lastStart, lastEnd time.Time) {
		for rank := range 3 {
			s, e := readMark(t, dir, rank, "start"), readMark(t, dir, rank, "end")
			if firstStart.IsZero() || s.Before(firstStart) {
				firstStart = s
			}
			if s.After(lastStart) {
				lastStart = s
			}
			if e.After(lastEnd) {
				lastEnd = e
			}
		}
		return
	}
	s0, _, e0 := span(dirs[0])
	s1, _, e1 := span(dirs[1])
	first, second := 0, 1
	if s1.Before(s0) {
		first, second = 1, 0
		s0, e0, s1, e1 = s1, e1, s0, e0
	}
	if s1.Before(e0) {
		t.Errorf("gang g%d started a replica at %s, before gang g%d's last replica ended at %s",
			second, s1.Format(time.StampMicro), first, e0.Format(time.StampMicro))
	}
	// Which gang waited is asserted by the log line below; how long is the machine's business.
	t.Logf("waited: g%d %s, g%d %s", first, results[first].Waited, second, results[second].Waited)
	want := fmt.Sprintf("gang g%d waiting: needs 3 slots, 1 of 4 free\n", second)
	if out := logs.String(); strings.Count(out, want) != 1 || strings.Count(out, "waiting") != 1 {
		t.Errorf("want one line %q in\n%s", want, out)
	}
	_ = e1
}

// TestWaitingInArrivalOrder: a small gang that arrives after a waiting large one waits behind it
// although a slot is free for it, and starts only when the large one can start too.
func TestWaitingInArrivalOrder(t *testing.T) {
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	logs := &syncBuffer{}
	l := &Launcher{Slots: 4}
	var wg sync.WaitGroup
	// A holds its slots until both B and C are seen waiting.
	releaseA := filepath.Join(t.TempDir(), "release")
	t.Cleanup(func() { os.WriteFile(releaseA, nil, 0o644) }) // lets A end if the test fails first
	wg.Go(func() { l.Run(context.Background(), helperJob("A", 2, logs, "hold-until", dirA, releaseA)) })
	waitMarks(t, dirA, "start", 3)
	wg.Go(func() { l.Run(context.Background(), helperJob("B", 2, logs, "hold", dirB, "200ms")) })
	waitLog(t, logs, "gang B waiting")
	wg.Go(func() { l.Run(context.Background(), helperJob("C", 0, logs, "hold", dirC, "10ms")) })
	waitLog(t, logs, "gang C waiting")
	if err := os.WriteFile(releaseA, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !strings.Contains(logs.String(), "gang C waiting: needs 1 slots, 1 of 4 free, but 1 gang(s) ahead wait for them") {
		t.Errorf("log:\n%s", logs.String())
	}
	var aEnd time.Time
	for rank := range 3 {
		if e := readMark(t, dirA, rank, "end"); e.After(aEnd) {
			aEnd = e
		}
	}
	if c := readMark(t, dirC, 0, "start"); c.Before(aEnd) {
		t.Errorf("C started at %s, before A ended at %s and so ahead of B", c.Format(time.StampMicro), aEnd.Format(time.StampMicro))
	}
}

func waitLog(t *testing.T, logs *syncBuffer, text string) {
	t.Helper()
	const guard = time.Minute // a hang guard: the line comes within milliseconds
	deadline := time.Now().Add(guard)
	for !strings.Contains(logs.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log after %s:\n%s", text, guard, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	logs := &syncBuffer{}
	l := &Launcher{Slots: 2}
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	var startedA atomic.Bool
	go func() {
		j := helperJob("A", 1, logs, "run", dirA)
		j.Started = func() { startedA.Store(true) }
		_, err := l.Run(ctxA, j)
		doneA <- err
	}()
	waitMarks(t, dirA, "start", 2)
	// The hook runs once every replica is started, which may be just after they write marks.
	for deadline := time.Now().Add(time.Minute); !startedA.Load() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !startedA.Load() {
		t.Error("A's replicas run, and its Started hook was not called")
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := make(chan error, 1)
	whyB := make(chan string, 2)
	go func() {
		j := helperJob("B", 0, logs, "run", dirB)
		j.Waiting = func(why string) { whyB <- why }
		j.Started = func() { t.Error("B's Started hook called though it never ran") }
		_, err := l.Run(ctxB, j)
		doneB <- err
	}()
	if why := <-whyB; why != "needs 1 slots, 0 of 2 free" {
		t.Errorf("B's Waiting hook: %q", why)
	}
	waitLog(t, logs, "gang B waiting: needs 1 slots, 0 of 2 free")
	cancelB()
	if err := <-doneB; !errors.Is(err, context.Canceled) || err.Error() != "gang B: gave up waiting for 1 slots: context canceled" {
		t.Errorf("B: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dirB, "*")); len(m) != 0 {
		t.Errorf("B started: %v", m)
	}
	cancelA()
	<-doneA
	// Both gangs gave their slots back.
	if _, err := l.Run(context.Background(), helperJob("C", 1, &syncBuffer{}, "log")); err != nil {
		t.Errorf("C after A and B: %v", err)
	}
}

// TestOnFailureRestartsTheGang: with restartPolicy OnFailure a gang whose rank was killed starts
// again, every replica on the same ports, and succeeds; the restart is in the log and the result.
func TestOnFailureRestartsTheGang(t *testing.T) {
	dir := t.TempDir()
	logs := &syncBuffer{}
	j := helperJob("flaky", 2, logs, "flaky", dir, "2", "once")
	j.RestartPolicy, j.BackoffLimit, j.PeerLostExitCode = RestartOnFailure, 4, 3
	res, err := (&Launcher{}).Run(context.Background(), j)
	if err != nil {
		t.Fatalf("restarted gang failed: %v\n%s", err, logs.String())
	}
	if res.Restarts != 1 || !strings.Contains(logs.String(), "gang flaky restarting (restart 1, 3 of backoff limit 4 replica restarts): gang flaky failed: worker-1 (rank 2) was killed by SIGKILL") {
		t.Fatalf("restarts %d; log:\n%s", res.Restarts, logs.String())
	}
	for _, r := range res.Replicas {
		if r.ExitCode != 0 {
			t.Errorf("after the restart %s exited %d", r.Name, r.ExitCode)
		}
	}
}

// TestBackoffLimitEndsRestarts: a gang that keeps failing restarts while the replicas' restarts
// stay below the backoff limit (counted as the Training Operator counts them), then fails with
// the cause and the limit.
func TestBackoffLimitEndsRestarts(t *testing.T) {
	for _, c := range []struct {
		policy          string
		limit, restarts int
	}{{RestartOnFailure, 5, 2}, {RestartOnFailure, 4, 1}, {RestartOnFailure, 2, 0}, {RestartNever, 10, 0}, {"", 10, 0}} {
		dir := t.TempDir()
		logs := &syncBuffer{}
		j := helperJob("always", 1, logs, "flaky", dir, "1", "always")
		j.RestartPolicy, j.BackoffLimit, j.PeerLostExitCode = c.policy, c.limit, 3
		res, err := (&Launcher{}).Run(context.Background(), j)
		if err == nil || !strings.Contains(err.Error(), "worker-0 (rank 1) was killed by SIGKILL") {
			t.Fatalf("%+v: err = %v, want the killed worker named", c, err)
		}
		if res.Restarts != c.restarts {
			t.Errorf("%+v: %d restarts, want %d\n%s", c, res.Restarts, c.restarts, logs.String())
		}
		if c.policy == RestartOnFailure && !strings.Contains(err.Error(), fmt.Sprintf("backoff limit %d reached", c.limit)) {
			t.Errorf("%+v: err = %v, want the backoff limit named", c, err)
		}
	}
}
