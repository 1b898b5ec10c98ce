package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/plumbing/sysmem"

	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/test/evaltest"
	"github.com/gangboost/gangboost/test/testbin"
)

// trainerBin is gangboost-train built once for every test in this package.
var trainerBin string

func TestMain(m *testing.M) {
	var err error
	if trainerBin, err = testbin.Build("./components/xgboost-trainer"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testbin.Main(m)
}

// writeCSV writes n rows of a synthetic binary classification problem with f features, a few
// missing cells, and a label column named "y".
func writeCSV(t *testing.T, path string, n, f int, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	var b strings.Builder
	for j := 0; j < f; j++ {
		fmt.Fprintf(&b, "x%d,", j)
	}
	b.WriteString("y\n")
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < f; j++ {
			v := r.NormFloat64()
			s += v * float64(j%3-1)
			if r.Intn(20) == 0 {
				b.WriteString(",")
				continue
			}
			fmt.Fprintf(&b, "%.5f,", v)
		}
		if s+0.3*r.NormFloat64() > 0 {
			b.WriteString("1\n")
		} else {
			b.WriteString("0\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rank is one process of a gang started by the test itself, with the Training Operator's env.
type rank struct {
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer = syncbuf.Buffer

func startGang(t *testing.T, world int, args ...string) []*rank {
	t.Helper()
	return startGangEach(t, world, func(int) []string { return args })
}

// startGangEach starts a gang whose ranks get their own arguments, as pods that mount different
// files would read them.
func startGangEach(t *testing.T, world int, argsOf func(rank int) []string) []*rank {
	t.Helper()
	// The gang uses the port and the one after it (tracker, gang watch): FreePort keeps both free.
	port := evaltest.FreePort(t)
	var ranks []*rank
	for r := 0; r < world; r++ {
		cmd := exec.Command(trainerBin, argsOf(r)...)
		cmd.Env = append(os.Environ(),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			"WORLD_SIZE="+strconv.Itoa(world), "RANK="+strconv.Itoa(r))
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, &rank{cmd: cmd, out: out})
	}
	t.Cleanup(func() {
		for _, r := range ranks {
			_ = r.cmd.Process.Kill()
		}
	})
	return ranks
}

// rankFailedGrace is how long waitAll lets the other ranks run on after one failed: they notice
// within the gang timeout (5s in these tests), as a launcher would stop them; a rank 0 that fails
// before its gang watch listens leaves the others waiting for the whole gang start timeout. It is
// a hang guard, several times what a loaded CI machine takes, not a timing.
const rankFailedGrace = time.Minute

// waitAll waits for every rank, failing the test with each rank's state and log tail if any is
// still running after limit, or rankFailedGrace after another rank failed.
func waitAll(t *testing.T, ranks []*rank, limit time.Duration) []int {
	t.Helper()
	codes := make([]int, len(ranks))
	done := make(chan int, len(ranks))
	for i, r := range ranks {
		go func() {
			_ = r.cmd.Wait()
			codes[i] = r.cmd.ProcessState.ExitCode()
			done <- i
		}()
	}
	end := time.Now().Add(limit)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	why := fmt.Sprintf("gang still running after %s", limit)
	exited := make([]bool, len(ranks))
	for range ranks {
		select {
		case i := <-done:
			exited[i] = true
			if codes[i] != 0 && time.Until(end) > rankFailedGrace {
				end = time.Now().Add(rankFailedGrace)
				deadline.Reset(rankFailedGrace)
				why = fmt.Sprintf("rank %d exited %d and the others still ran %s later", i, codes[i], rankFailedGrace)
			}
		case <-deadline.C:
			t.Fatalf("%s:\n%s", why, dumpHung(ranks, exited, done))
		}
	}
	return codes
}

// dumpHung describes a hung gang for the failure message: each rank still running gets its
// native thread stacks (gdb, where installed: libxgboost's threads) and its goroutines (SIGQUIT
// makes the Go runtime print them and exit), then every rank's log tail.
func dumpHung(ranks []*rank, exited []bool, done <-chan int) string {
	var b strings.Builder
	running := 0
	for i, r := range ranks {
		if exited[i] {
			continue
		}
		running++
		fmt.Fprintf(&b, "=== rank %d (pid %d) still running; native stacks:\n%s\n", i, r.cmd.Process.Pid, nativeStacks(r.cmd.Process.Pid))
		_ = r.cmd.Process.Signal(syscall.SIGQUIT)
	}
	// Give the runtimes time to print their goroutine dumps.
	timeout := time.After(10 * time.Second)
	for running > 0 {
		select {
		case i := <-done:
			exited[i] = true
			running--
		case <-timeout:
			running = 0
		}
	}
	for i, r := range ranks {
		state := "still running"
		if exited[i] {
			state = "exited " + strconv.Itoa(r.cmd.ProcessState.ExitCode())
		}
		fmt.Fprintf(&b, "=== rank %d (%s) output, last 200 lines:\n%s\n", i, state, tailLines(r.out.String(), 200))
	}
	return b.String()
}

// nativeStacks is every thread's C/C++ backtrace of a process, or why there is none.
func nativeStacks(pid int) string {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return "(no gdb installed)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gdb, "-batch", "-nx", "-iex", "set auto-load off", "-p", strconv.Itoa(pid),
		"-ex", "set pagination off", "-ex", "thread apply all bt 30").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(gdb: %v)\n%s", err, tailLines(string(out), 40))
	}
	return string(out)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return fmt.Sprintf("[%d lines before]\n%s", len(lines)-n, strings.Join(lines[len(lines)-n:], ""))
}

var shaRe = regexp.MustCompile(`msg="training finished" rank=(\d+) rounds=\d+ model_sha256=([0-9a-f]{64})`)

func lastMetric(t *testing.T, dir, name string) float64 {
	t.Helper()
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := md.Metrics[name]
	if len(v) == 0 {
		t.Fatalf("metadata has no %s: %v", name, md.Metrics)
	}
	return v[len(v)-1]
}

func TestDistributedTrainingAgreesAcrossRanks(t *testing.T) {
	dir := t.TempDir()
	trainCSV, evalCSV := filepath.Join(dir, "train.csv"), filepath.Join(dir, "eval.csv")
	writeCSV(t, trainCSV, 4000, 8, 1)
	writeCSV(t, evalCSV, 1000, 8, 2)
	args := func(modelDir string) []string {
		return []string{"--train", trainCSV, "--eval", evalCSV, "--label", "y", "--objective", "binary:logistic",
			"--num-round", "30", "--max-depth", "4", "--nthread", "1", "--model-dir", modelDir, "--gang-timeout", "5s"}
	}
	single := filepath.Join(dir, "single")
	out, err := exec.Command(trainerBin, args(single)...).CombinedOutput()
	if err != nil {
		t.Fatalf("single process: %v\n%s", err, out)
	}
	want := lastMetric(t, single, "eval-logloss")

	for _, world := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("world=%d", world), func(t *testing.T) {
			modelDir := filepath.Join(dir, fmt.Sprintf("w%d", world))
			ranks := startGang(t, world, args(modelDir)...)
			codes := waitAll(t, ranks, 2*time.Minute)
			shas := map[string]bool{}
			for i, r := range ranks {
				if codes[i] != 0 {
					t.Fatalf("rank %d exited %d:\n%s", i, codes[i], r.out.String())
				}
				m := shaRe.FindStringSubmatch(r.out.String())
				if m == nil || m[1] != strconv.Itoa(i) {
					t.Fatalf("rank %d: no 'training finished' line for its own rank:\n%s", i, r.out.String())
				}
				shas[m[2]] = true
			}
			if len(shas) != 1 {
				t.Fatalf("ranks ended with %d different models: %v", len(shas), shas)
			}
			md, err := modeldir.ReadMetadata(modelDir)
			if err != nil {
				t.Fatal(err)
			}
			if md.WorldSize != world || md.TrainRows != 4000 || !shas[md.ModelSHA256] {
				t.Fatalf("metadata: world %d rows %d sha %s; want %d, 4000, the ranks' model", md.WorldSize, md.TrainRows, md.ModelSHA256, world)
			}
			got := lastMetric(t, modelDir, "eval-logloss")
			// Distributed hist merges per-rank quantile sketches, so splits may differ slightly.
			if math.Abs(got-want) > 0.03 {
				t.Fatalf("eval-logloss %v with %d ranks, %v in one process", got, world, want)
			}
			t.Logf("world %d: eval-logloss %.4f (single process %.4f)", world, got, want)
		})
	}
}

func TestLocalGangWritesModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models", "iris", "v1")
	out, err := exec.Command(trainerBin, "--local", "2", "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", "10", "--eval-fraction", "0.2", "--model-dir", dir, "--nthread", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("--local 2: %v\n%s", err, out)
	}
	for _, prefix := range []string{"[master-0]", "[worker-0]", "[worker-1]"} {
		if !strings.Contains(string(out), prefix) {
			t.Errorf("log has no %s lines:\n%s", prefix, out)
		}
	}
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	if md.WorldSize != 3 || md.NumClass != 3 || len(md.Classes) != 3 || md.NumFeatures != 4 || md.Label != "species" {
		t.Fatalf("metadata = %+v", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		t.Fatal(err)
	}
	if acc := len(md.Metrics["eval-mlogloss"]); acc != 10 {
		t.Fatalf("eval-mlogloss has %d rounds, want 10", acc)
	}
}

func TestLostWorkerStopsTheGang(t *testing.T) {
	dir := t.TempDir()
	trainCSV := filepath.Join(dir, "train.csv")
	writeCSV(t, trainCSV, 20000, 20, 3)
	ranks := startGang(t, 3, "--train", trainCSV, "--label", "y", "--objective", "binary:logistic",
		"--num-round", "100000", "--nthread", "1", "--model-dir", filepath.Join(dir, "m"), "--gang-timeout", "5s")
	victim := ranks[2]
	deadline := time.Now().Add(time.Minute)
	// Progress lines come at most once a second or per 1% of the rounds: wait for one past round 3.
	pastRound3 := regexp.MustCompile(`msg=round .*round=([3-9]|\d{2,}) `)
	for !pastRound3.MatchString(victim.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("rank 2 never reached round 3:\n%s", victim.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// A hang guard: the survivors notice the loss within --gang-timeout (5s).
	codes := waitAll(t, ranks[:2], time.Minute)
	t.Logf("survivors exited %s after the kill", time.Since(killed).Round(time.Millisecond))
	for i, code := range codes {
		out := ranks[i].out.String()
		if code == 0 {
			t.Fatalf("rank %d exited 0 after rank 2 died:\n%s", i, out)
		}
		if !strings.Contains(out, "rank 2 lost") {
			t.Fatalf("rank %d's error does not name rank 2:\n%s", i, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m", "model.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed gang left a model behind (stat err %v)", err)
	}
}

// The Go runtime preempts goroutines with SIGURG sent to their thread, and under load it can
// reach the thread that sits in libxgboost's collective call. rabit's poll() loop takes EINTR for
// a broken link ("Failed to poll.") and the whole gang failed. Signals aimed at the threads
// blocked in poll(2), as fast as the test can send them, must not matter. The test counts the
// signals the kernel accepted for such a thread, in a process that catches SIGURG (its default
// action is to ignore it, which would interrupt nothing), and fails when there were none: a run
// that found no thread in poll tested nothing.
func TestSignalsDuringCollectiveCalls(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc to find the threads in poll(2)")
	}
	pollCalls, ok := pollSyscalls[runtime.GOARCH]
	if !ok {
		t.Skipf("the poll(2) and ppoll(2) syscall numbers of %s are not known to this test", runtime.GOARCH)
	}
	dir := t.TempDir()
	trainCSV := filepath.Join(dir, "train.csv")
	writeCSV(t, trainCSV, 3000, 8, 4)
	ranks := startGang(t, 3, "--train", trainCSV, "--label", "y", "--objective", "binary:logistic",
		"--num-round", "60", "--max-depth", "4", "--nthread", "1", "--gang-timeout", "5s")
	stop, done := make(chan struct{}), make(chan struct{})
	var delivered, masked, notCaught int
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, r := range ranks {
				pid := r.cmd.Process.Pid
				tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
				for _, task := range tasks {
					sc, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
					if f := bytes.Fields(sc); err != nil || len(f) == 0 || !pollCalls[string(f[0])] {
						continue
					}
					blocked, caught := sigurgDisposition(pid, task.Name())
					if !caught {
						notCaught++
						continue
					}
					if tid, err := strconv.Atoi(task.Name()); err == nil && syscall.Tgkill(pid, tid, syscall.SIGURG) == nil {
						delivered++
						if blocked {
							masked++
						}
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	codes := waitAll(t, ranks, 2*time.Minute)
	close(stop)
	<-done
	for i, code := range codes {
		if code != 0 {
			t.Fatalf("rank %d exited %d:\n%s", i, code, tailLines(ranks[i].out.String(), 40))
		}
	}
	t.Logf("ranks finished under %d SIGURGs sent to threads in poll(2) (%d of them found SIGURG blocked, pending until the call returned)", delivered, masked)
	if delivered == 0 {
		t.Fatalf("no SIGURG was sent to a thread in poll(2) (%d threads in poll in processes that do not catch SIGURG): this run tested nothing", notCaught)
	}
}

// pollSyscalls are the numbers /proc/<pid>/task/<tid>/syscall shows for a thread blocked in
// poll(2) or ppoll(2): glibc's poll() is the poll syscall on amd64 and ppoll on arm64, which has
// no poll syscall.
var pollSyscalls = map[string]map[string]bool{
	"amd64": {"7": true, "271": true},
	"arm64": {"73": true},
}

// sigurgDisposition reads whether thread tid of pid blocks SIGURG (SigBlk) and whether the
// process catches it (SigCgt), as the Go runtime does.
func sigurgDisposition(pid int, tid string) (blocked, caught bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, tid))
	if err != nil {
		return false, false
	}
	mask := func(field string) uint64 {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				m, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return m
			}
		}
		return 0
	}
	bit := uint64(1) << (uint(syscall.SIGURG) - 1)
	return mask("SigBlk")&bit != 0, mask("SigCgt")&bit != 0
}

func TestBadDataFailsOnEveryRank(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file, label, want string
	}{
		{"missing label column", write("nolabel.csv", "a,b\n1,2\n3,4\n"), "y", `no label column \"y\"`},
		{"non-numeric cell", write("text.csv", "a,b,y\n1,2,0\n3,abc,1\n5,6,0\n7,8,1\n"), "y", `text.csv:3`},
		{"ragged row", write("ragged.csv", "a,b,y\n1,2,0\n3,1\n5,6,0\n7,8,1\n"), "y", `ragged.csv:3`},
		{"empty shard", write("tiny.csv", "a,b,y\n1,2,0\n"), "y", `tiny.csv`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ranks := startGang(t, 2, "--train", c.file, "--label", c.label, "--objective", "binary:logistic",
				"--num-round", "2", "--gang-start-timeout", "20s")
			// A hang guard: a rank that failed early may leave the other waiting out the 20s
			// --gang-start-timeout.
			codes := waitAll(t, ranks, 2*time.Minute)
			for i, r := range ranks {
				out := r.out.String()
				if codes[i] == 0 || !strings.Contains(out, c.want) {
					t.Fatalf("rank %d: exit %d, want failure mentioning %q:\n%s", i, codes[i], c.want, out)
				}
			}
		})
	}
}

// Every rank's stdout stays line-oriented for kubectl logs.
func TestProgressIsOneLinePerRound(t *testing.T) {
	out, err := exec.Command(trainerBin, "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", "5", "--eval-fraction", "0.3").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `msg=round `) {
			n++
			if !strings.Contains(sc.Text(), "eval-mlogloss=") || !strings.Contains(sc.Text(), " of=5") {
				t.Fatalf("round line lacks metrics: %s", sc.Text())
			}
		}
	}
	if n != 5 {
		t.Fatalf("%d round lines, want 5:\n%s", n, out)
	}
}

// Bad flag values exit 2 before any data is read or any rank is started.
func TestBadFlagsExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--eval-fraction", "1.0"}, "eval fraction 1: want 0 <= fraction < 1"},
		{[]string{"--eval-fraction", "1.5"}, "eval fraction 1.5"},
		{[]string{"--eval-fraction", "-0.2"}, "eval fraction -0.2"},
		{[]string{"--num-round", "0"}, "num_round 0: want at least 1"},
		{[]string{"--model-format", "pickle"}, `model format "pickle": want json or ubj`},
		{[]string{"--local", "-1"}, "--local -1"},
		{[]string{"--local", "2", "--num-round", "0"}, "num_round 0"},
		{[]string{"--param", "novalue"}, "want key=value"},
		{[]string{"--num-round", "400000"}, "num_round 400000: want at most 100000"},
		{[]string{"--eta", "NaN"}, "eta NaN: want more than 0"},
		{[]string{"--lambda", "-1"}, "reg_lambda -1: want 0 or more"},
		{[]string{"--tree-method", "fast"}, `tree_method "fast": want one of auto, exact, approx, hist, gpu_hist`},
		{[]string{"--param", "max_dpeth=3"}, `"max_dpeth" is not an XGBoost 3.0 training parameter (did you mean max_depth?)`},
		// Debian's libxgboost 3.0 is built without CUDA: a GPU setting is refused before any data
		// is read, naming the library and what to do.
		{[]string{"--param", "device=cuda"}, "device=cuda: this gangboost-train links libxgboost 3.0.0 built without CUDA (XGBuildInfo USE_CUDA false)"},
		{[]string{"--tree-method", "gpu_hist"}, "tree_method=gpu_hist: this gangboost-train links libxgboost 3.0.0 built without CUDA"},
		// GPUs the pod holds (launch passes its gpus input): refused, whatever image launch knew.
		{[]string{"--gpus", "1"}, "--gpus 1 (the pod holds 1 GPU(s)): this gangboost-train links libxgboost 3.0.0 built without CUDA"},
		{[]string{"--gpus", "-1"}, "--gpus -1: want 0 or more"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			args := append([]string{"--dataset", "iris", "--objective", "multi:softprob", "--num-round", "2", "--model-dir", dir}, c.args...)
			cmd := exec.Command(trainerBin, args...)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
				t.Fatalf("exit %d (%v), want 2 with %q:\n%s", code, err, c.want, out)
			}
			if strings.Contains(string(out), "[master-0]") || strings.Contains(string(out), "data loaded") {
				t.Fatalf("a rank started despite the bad flag:\n%s", out)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("a model folder appeared (stat: %v)", err)
			}
		})
	}
}

// --build-info prints XGBuildInfo of the linked libxgboost: Debian 13's 3.0.0, CPU only.
func TestBuildInfo(t *testing.T) {
	out, err := exec.Command(trainerBin, "--build-info").Output()
	if err != nil {
		t.Fatalf("--build-info: %v\n%s", err, out)
	}
	var info map[string]any
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("--build-info printed %q: %v", out, err)
	}
	if info["libxgboost_version"] != "3.0.0" || info["USE_CUDA"] != false || info["USE_OPENMP"] != true {
		t.Fatalf("--build-info: %s; want libxgboost_version 3.0.0, USE_CUDA false, USE_OPENMP true", out)
	}
}

// A --model-dir that holds anything but a model folder's files is refused before training: the
// trainer replaces the folder whole, so a working folder, a model's folder of versions, models/
// itself or a claim's parent (--model-dir /mnt/pvc/..) would lose everything else in it.
func TestModelDirNeverDeletesOtherFiles(t *testing.T) {
	cases := []struct {
		name  string
		files []string // created under the temporary folder
		dir   string   // --model-dir, relative to it
		want  string
	}{
		{"a working folder", []string{"work/bench.log", "work/results.csv"}, "work", "it holds bench.log, results.csv"},
		{"models/ itself (model_version ..)", []string{"models/iris/v1/model.json", "models/other/v1/model.json"}, "models/iris/..", "it holds iris/, other/"},
		{"a model's versions (model_version .)", []string{"models/iris/v1/model.json", "models/iris/v2/model.json"}, "models/iris/.", "it holds v1/, v2/"},
		{"the claim's parent", []string{"mnt/pvc/datasets/iris/train.csv"}, "mnt/pvc/..", "it holds pvc/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range c.files {
				p := filepath.Join(root, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Without --overwrite an existing folder is never written; with it, only a model
			// folder is, since publishing replaces it whole.
			for _, overwrite := range []bool{false, true} {
				args := []string{"--dataset", "iris", "--objective", "multi:softprob", "--num-round", "2",
					"--model-dir", filepath.Join(root, filepath.FromSlash(c.dir))}
				want := []string{"exists", "never replaced"}
				if overwrite {
					args = append(args, "--overwrite")
					want = []string{"is not a model folder", c.want}
				}
				cmd := exec.Command(trainerBin, args...)
				out, _ := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), want[0]) || !strings.Contains(string(out), want[1]) {
					t.Fatalf("overwrite %v: exit %d, want 2 refusing the folder (%q):\n%s", overwrite, code, want, out)
				}
				t.Logf("overwrite %v: refused: %s", overwrite, strings.TrimSpace(string(out)))
			}
			for _, f := range c.files {
				if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f))); err != nil || string(b) != "keep" {
					t.Errorf("%s: %q, %v", f, b, err)
				}
			}
		})
	}
}

// A published version is never replaced by another producer: the second training is refused
// before it starts and the first model stays byte for byte; the same producer (a retried job)
// replaces its own output, and --overwrite replaces it on purpose, recording the producer.
func TestModelVersionNeverReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models", "iris", "v1")
	train := func(extra ...string) (string, int) {
		cmd := exec.Command(trainerBin, append([]string{"--dataset", "iris", "--objective", "multi:softprob", "--num-round", "2",
			"--nthread", "1", "--model-dir", dir}, extra...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	read := func() (*modeldir.Metadata, []byte) {
		md, err := modeldir.ReadMetadata(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, md.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		return md, b
	}
	if out, code := train("--producer", "job-a"); code != 0 {
		t.Fatalf("first training: exit %d:\n%s", code, out)
	}
	first, firstModel := read()
	if first.Producer != "job-a" {
		t.Fatalf("metadata producer %q, want job-a", first.Producer)
	}
	out, code := train("--producer", "job-b", "--seed", "7")
	if code != 2 || !strings.Contains(out, dir) || !strings.Contains(out, "written by job-a") || strings.Contains(out, "data loaded") {
		t.Fatalf("another producer: exit %d, want 2 before training, naming %s and job-a:\n%s", code, dir, out)
	}
	if md, b := read(); md.ModelSHA256 != first.ModelSHA256 || !bytes.Equal(b, firstModel) {
		t.Fatal("the refused training changed the published model")
	}
	for _, c := range []struct {
		name  string
		flags []string
		want  string
	}{{"the same producer (a retried job)", []string{"--producer", "job-a", "--seed", "3"}, "job-a"},
		{"--overwrite", []string{"--producer", "job-c", "--seed", "5", "--overwrite"}, "job-c"}} {
		if out, code := train(c.flags...); code != 0 {
			t.Fatalf("%s: exit %d:\n%s", c.name, code, out)
		}
		md, _ := read()
		if md.Producer != c.want {
			t.Fatalf("%s: producer %q, want %q", c.name, md.Producer, c.want)
		}
	}
}

// peakRSS is a finished child's peak resident set (VmHWM), from its rusage.
func peakRSS(t *testing.T, cmd *exec.Cmd) uint64 {
	t.Helper()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	return uint64(ru.Maxrss) << 10 // kB on Linux
}

// Input that would exhaust memory fails as bad data (exit 1) with a message naming the flag, and
// with a small peak RSS: the bounds are checked before the memory is taken.
func TestMemoryBounds(t *testing.T) {
	wide, err := filepath.Abs("../../internal/training/dataset/testdata/wide_index.libsvm")
	if err != nil {
		t.Fatal(err)
	}
	avail, err := sysmem.Available()
	if err != nil {
		t.Fatal(err)
	}
	const rssBound = 200 << 20
	cases := []struct {
		name  string
		args  []string
		stdin int64 // bytes without a line break written to the child's stdin
		want  string
		skip  string
	}{
		{name: "stray LibSVM index", args: []string{"--train", wide, "--max-matrix-bytes", "8GiB"},
			want: "129 rows x 16777216 features x 4 bytes = 8.1 GiB, more than --max-matrix-bytes 8 GiB"},
		{name: "stray LibSVM index, default bound", args: []string{"--train", wide},
			want: "more than --max-matrix-bytes",
			skip: map[bool]string{true: "this machine has memory for the whole 144 GiB matrix"}[avail/4 > 2300<<26]},
		{name: "one endless line on a pipe", args: []string{"--train", "/dev/stdin", "--format", "csv", "--label", "y"},
			stdin: 1 << 30, want: "/dev/stdin:1: the line is longer than 16777216 bytes (--max-line-bytes)"},
		{name: "a line over --max-line-bytes", args: []string{"--train", "/dev/stdin", "--format", "libsvm", "--max-line-bytes", "1MiB"},
			stdin: 64 << 20, want: "/dev/stdin:1: the line is longer than 1048576 bytes (--max-line-bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, trainerBin, append([]string{"--objective", "binary:logistic", "--num-round", "2"}, c.args...)...)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			var feed io.WriteCloser
			if c.stdin > 0 {
				if feed, err = cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if feed != nil {
				go func() {
					// Stops at the first write after the child closed its end.
					chunk := bytes.Repeat([]byte{'7'}, 1<<20)
					for n := int64(0); n < c.stdin; n += int64(len(chunk)) {
						if _, err := feed.Write(chunk); err != nil {
							break
						}
					}
					feed.Close()
				}()
			}
			_ = cmd.Wait()
			code, rss := cmd.ProcessState.ExitCode(), peakRSS(t, cmd)
			t.Logf("exit %d, peak RSS %d MiB", code, rss>>20)
			if code != 1 || !strings.Contains(out.String(), c.want) {
				t.Fatalf("exit %d, want 1 with %q:\n%.2000s", code, c.want, out.String())
			}
			if rss > rssBound {
				t.Fatalf("peak RSS %d MiB, want under %d MiB", rss>>20, rssBound>>20)
			}
		})
	}
}

// Ranks that read different data must not reach libxgboost's collective with different shapes
// (it blocks for ever there while heartbeats go on): each fails, naming how the ranks differ.
func TestRanksThatDisagreeFail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abc := write("abc.csv", "a,b,y\n1,2,a\n3,4,b\n5,6,c\n7,8,a\n2,2,b\n1,1,c\n")
	ab := write("ab.csv", "a,b,y\n1,2,a\n3,4,b\n5,6,a\n7,8,b\n2,2,a\n1,1,b\n")
	abx := write("abx.csv", "a,x,y\n1,2,a\n3,4,b\n5,6,a\n7,8,b\n2,2,a\n1,1,b\n")
	cases := []struct {
		name  string
		files [2]string
		extra [2][]string
		want  string
	}{
		{"string classes", [2]string{ab, abc}, [2][]string{}, "rank 1 has classes [a b c], rank 0 has [a b]; rank 1 has num_class 3, rank 0 has 2"},
		{"feature names", [2]string{ab, abx}, [2][]string{}, "rank 1 has feature names [a x], rank 0 has [a b]"},
		{"settings", [2]string{ab, ab}, [2][]string{nil, {"--max-depth", "3"}}, `rank 1 has parameter max_depth \"3\", rank 0 has \"6\"`}, // quotes escaped in the log line
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			modelDir := filepath.Join(dir, "m-"+strings.ReplaceAll(c.name, " ", "-"))
			began := time.Now()
			ranks := startGangEach(t, 2, func(r int) []string {
				return append([]string{"--train", c.files[r], "--label", "y", "--objective", "multi:softprob", "--num-round", "5",
					"--nthread", "1", "--gang-timeout", "5s", "--model-dir", modelDir}, c.extra[r]...)
			})
			codes := waitAll(t, ranks, time.Minute)
			t.Logf("both ranks ended %s after the start", time.Since(began).Round(time.Millisecond))
			for i, r := range ranks {
				if out := r.out.String(); codes[i] != 1 || !strings.Contains(out, "the ranks disagree: "+c.want) {
					t.Fatalf("rank %d: exit %d, want 1 naming the difference %q:\n%s", i, codes[i], c.want, out)
				}
			}
			if _, err := os.Stat(modelDir); !os.IsNotExist(err) {
				t.Fatalf("a model folder appeared (stat: %v)", err)
			}
		})
	}
}

// --eval-fraction that leaves a rank without training or evaluation rows fails on every rank.
func TestEvalFractionLeavingNoRows(t *testing.T) {
	for _, c := range []struct {
		fraction, want string
	}{
		{"0.01", "--eval-fraction 0.01 leaves rank 0 with 0 evaluation rows (and 75 training rows)"},
		{"0.99", "--eval-fraction 0.99 leaves rank 0 with 0 training rows (and 75 evaluation rows)"},
	} {
		t.Run(c.fraction, func(t *testing.T) {
			ranks := startGang(t, 2, "--dataset", "iris", "--objective", "multi:softprob", "--num-round", "2",
				"--nthread", "1", "--eval-fraction", c.fraction, "--gang-timeout", "5s")
			codes := waitAll(t, ranks, time.Minute)
			for i, r := range ranks {
				if out := r.out.String(); codes[i] != 1 || !strings.Contains(out, c.want) {
					t.Fatalf("rank %d: exit %d, want 1 with %q:\n%s", i, codes[i], c.want, out)
				}
			}
		})
	}
}

// childWithEnv is the pid of a child process of parent whose environment holds kv (a replica of
// a local gang: RANK=2), or 0.
func childWithEnv(parent int, kv string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		for _, e := range bytes.Split(env, []byte{0}) {
			if string(e) == kv {
				pid, _ := strconv.Atoi(filepath.Base(p))
				return pid
			}
		}
	}
	return 0
}

// TestKilledRankResumesFromCheckpoint: a local gang of 3 ranks loses rank 2 (SIGKILL) mid-training;
// the gang starts again, every rank resumes from the newest checkpoint rank 0 wrote, and the model
// is byte for byte (so predicts exactly as) the model of a gang that was never interrupted. Once
// the model is published the checkpoints are gone.
func TestKilledRankResumesFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	trainCSV := filepath.Join(dir, "train.csv")
	writeCSV(t, trainCSV, 10000, 20, 5)
	const rounds = 200
	common := []string{"--local", "2", "--train", trainCSV, "--label", "y", "--objective", "binary:logistic",
		"--num-round", strconv.Itoa(rounds), "--nthread", "1", "--eval-fraction", "0.1", "--gang-timeout", "3s"}

	wholeDir := filepath.Join(dir, "whole")
	start := time.Now()
	if out, err := exec.Command(trainerBin, append(common, "--model-dir", wholeDir)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted gang: %v\n%s", err, tailLines(string(out), 30))
	}
	wholeTook := time.Since(start)

	ckDir := filepath.Join(dir, "checkpoints", "m", "v1")
	resumedDir := filepath.Join(dir, "resumed")
	cmd := exec.Command(trainerBin, append(common, "--model-dir", resumedDir, "--local-restarts", "1",
		"--checkpoint-dir", ckDir, "--checkpoint-every-rounds", "25")...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Kill rank 2 once rank 0 has written a checkpoint past round 50.
	written := regexp.MustCompile(`\[master-0\] .*msg="checkpoint written" rank=0 round=(\d+) `)
	deadline := time.Now().Add(2 * time.Minute)
	lastCheckpoint := 0
	for lastCheckpoint < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint past round 50 after 2 minutes:\n%s", tailLines(out.String(), 30))
		}
		for _, m := range written.FindAllStringSubmatch(out.String(), -1) {
			lastCheckpoint, _ = strconv.Atoi(m[1])
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim := childWithEnv(cmd.Process.Pid, "RANK=2")
	if victim == 0 {
		t.Fatal("rank 2's process not found")
	}
	killedAt := time.Since(start)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// How long the gang takes from the kill to boosting again: the survivors notice the loss
	// (--gang-timeout at most), every rank exits, the gang starts and loads the data again.
	resumedLine := regexp.MustCompile(`\[master-0\] .*msg="resumed from checkpoint at round`)
	var backAfter time.Duration
	for backAfter == 0 && time.Since(start) < 2*time.Minute {
		if resumedLine.MatchString(out.String()) {
			backAfter = time.Since(start) - killedAt
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("restarted gang failed: %v\n%s", err, tailLines(out.String(), 40))
	}
	took := time.Since(start)
	log := out.String()
	resumedAt := regexp.MustCompile(`\[master-0\] .*msg="resumed from checkpoint at round (\d+)"`).FindStringSubmatch(log)
	if resumedAt == nil || !strings.Contains(log, "gang gangboost-train restarting (restart 1") {
		t.Fatalf("the gang did not restart and resume:\n%s", tailLines(log, 40))
	}
	k, _ := strconv.Atoi(resumedAt[1])
	if k < lastCheckpoint || k%25 != 0 {
		t.Errorf("resumed at round %d, want the newest checkpoint (at least %d, a multiple of 25)", k, lastCheckpoint)
	}
	for _, w := range []string{"worker-0", "worker-1"} {
		if !strings.Contains(log, "["+w+"] ") || !regexp.MustCompile(`\[`+w+`\] .*msg="resumed from checkpoint at round `+resumedAt[1]+`"`).MatchString(log) {
			t.Errorf("%s did not resume at round %d", w, k)
		}
	}
	md, err := modeldir.ReadMetadata(resumedDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.ResumedAt) != 1 || md.ResumedAt[0] != k || md.Rounds != rounds || len(md.Metrics["eval-logloss"]) != rounds {
		t.Errorf("metadata: resumed at %v, %d rounds, %d eval rounds; want [%d], %d", md.ResumedAt, md.Rounds, len(md.Metrics["eval-logloss"]), k, rounds)
	}
	whole, err := os.ReadFile(filepath.Join(wholeDir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := os.ReadFile(filepath.Join(resumedDir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, resumed) {
		t.Fatalf("the resumed gang's model (%d bytes) differs from the uninterrupted gang's (%d bytes)", len(resumed), len(whole))
	}
	if _, err := os.Stat(ckDir); !os.IsNotExist(err) {
		t.Errorf("checkpoint folder still there after the model was published (stat: %v)", err)
	}
	sizes := regexp.MustCompile(`msg="checkpoint written" rank=0 round=(\d+) \S+ bytes=(\d+) seconds=(\S+)`).FindAllStringSubmatch(log, -1)
	t.Logf("uninterrupted gang %s; interrupted gang killed at %s (checkpoint at round %d), boosting again %s after the kill from round %d, done after %s; model %d bytes equal",
		wholeTook.Round(time.Millisecond), killedAt.Round(time.Millisecond), lastCheckpoint, backAfter.Round(time.Millisecond), k, took.Round(time.Millisecond), len(whole))
	for _, s := range sizes {
		t.Logf("checkpoint round %s: %s bytes in %ss", s[1], s[2], s[3])
	}
}
