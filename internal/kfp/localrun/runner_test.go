package localrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/test/leaktest"
	"github.com/gangboost/gangboost/test/testbin"
)

// The end-to-end tests run testdata/tiny-pipeline.yaml, whose components are testdata/kfpstep built
// here and installed under the names the executors' commands use.

var (
	stepsOnce sync.Once
	stepsDir  string
	stepsErr  error
)

// helperEnv makes the test binary run a pipeline as the gangboost CLI would (signals included),
// so a test can interrupt a real run with SIGINT.
const helperEnv = "LOCALRUN_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	testbin.Main(m)
}

func helperMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pkg, err := ReadPackage(os.Getenv("LOCALRUN_PACKAGE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	params, _ := ParseOverrides(strings.Fields(os.Getenv("LOCALRUN_PARAMS")))
	_, err = Run(ctx, Options{Package: pkg, Params: params, WorkDir: os.Getenv("LOCALRUN_WORKDIR"),
		BinDir: os.Getenv("LOCALRUN_BINDIR"), Out: os.Stdout, Grace: time.Second})
	var se *StepError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrInterrupted):
		fmt.Println("interrupted:", err)
		return 130
	case errors.As(err, &se) && se.ExitCode > 0:
		return se.ExitCode
	default:
		fmt.Println(err)
		return 1
	}
}

func buildSteps(t *testing.T) string {
	t.Helper()
	stepsOnce.Do(func() {
		var bin string
		if bin, stepsErr = testbin.Build("./internal/kfp/localrun/testdata/kfpstep", "CGO_ENABLED=0"); stepsErr != nil {
			return
		}
		stepsDir = filepath.Dir(bin)
		for _, name := range []string{"produce", "transform", "consume"} {
			if stepsErr = os.Symlink("kfpstep", filepath.Join(stepsDir, name)); stepsErr != nil {
				return
			}
		}
	})
	if stepsErr != nil {
		t.Fatal(stepsErr)
	}
	return stepsDir
}

func tinyPackage(t *testing.T) *Package {
	t.Helper()
	p, err := ReadPackage("testdata/tiny-pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for the runner's writers and the test's reads.
type syncBuffer = syncbuf.Buffer

// assertNothingLeft fails when a process the run started still runs: a member of a recorded
// process group, or any process carrying the run's state folder in its environment, or, checked
// without the runner's own process scan, any process carrying the test's mark.
func assertNothingLeft(t *testing.T, workDir string, mark leaktest.Mark, groups ...int) {
	t.Helper()
	for _, g := range groups {
		if m := procgroup.Members(g); len(m) > 0 {
			t.Errorf("process group %d still has processes %v", g, m)
		}
	}
	if left := ProcessesWithEnv(EnvLocalState + "=" + filepath.Join(workDir, "state")); len(left) > 0 {
		for _, p := range left {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			t.Logf("left running: pid %d: %q", p, cmd)
		}
		t.Errorf("processes started by the run are still running: %v", left)
	}
	if left := mark.Processes(); len(left) > 0 {
		t.Errorf("processes carrying the test's mark %s are still running: %v", mark.Env(), left)
	}
	if recs, _ := ReadProcesses(filepath.Join(workDir, "state")); len(recs) > 0 {
		t.Errorf("process records left: %+v", recs)
	}
}

// markRun gives every process the test's in-process runs start (the runner passes its own
// environment to the steps) a mark of this test, and returns it.
func markRun(t *testing.T) leaktest.Mark {
	m := leaktest.New()
	t.Setenv(leaktest.Var, string(m))
	return m
}

// requireMarked is the positive control of assertNothingLeft's own scan: a process the run
// started and recorded is found by it while it runs, so finding none at the end means something.
func requireMarked(t *testing.T, mark leaktest.Mark, pid int) {
	t.Helper()
	for _, p := range mark.Processes() {
		if p.PID == pid {
			return
		}
	}
	t.Errorf("the running recorded process %d does not carry the mark %s (marked: %v): the leak check would miss what the run leaves", pid, mark.Env(), mark.Processes())
}

func TestRunTinyPipeline(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	var out syncBuffer
	var serverGroup int
	mark := markRun(t)
	start := time.Now()
	res, err := Run(context.Background(), Options{
		Package: tinyPackage(t), WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second,
		Params: map[string]string{"message": "hello", "count": "4", "behave": "consume=serve,produce=escape"},
		Finished: func(r *Result) {
			// The recorded server is up until the run ends.
			if len(r.Processes) != 1 {
				t.Errorf("recorded processes %+v, want the tiny server", r.Processes)
				return
			}
			serverGroup = r.Processes[0].PGID
			requireMarked(t, mark, r.Processes[0].PID)
			resp, err := http.Get(r.Processes[0].URL)
			if err != nil {
				t.Errorf("recorded server %s: %v", r.Processes[0].URL, err)
				return
			}
			resp.Body.Close()
		},
	})
	t.Logf("run took %v", time.Since(start))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if res.State != StateSucceeded {
		t.Fatalf("state %s", res.State)
	}
	var order []string
	for _, tr := range res.Tasks {
		order = append(order, tr.Name+"="+tr.State)
	}
	if got := strings.Join(order, " "); got != "produce=SUCCEEDED transform=SUCCEEDED consume=SUCCEEDED" {
		t.Errorf("tasks %s", got)
	}
	produce, transform, consume := res.Tasks[0], res.Tasks[1], res.Tasks[2]
	if produce.Outputs["text"] != "hello!" || produce.Outputs["n"] != 8.0 {
		t.Errorf("produce outputs %v (n comes from its output_file only)", produce.Outputs)
	}
	if transform.Outputs["score"] != 4.0 {
		t.Errorf("transform score %v, want 8*0.5", transform.Outputs["score"])
	}
	if consume.Outputs["summary"] != "hello! 4" {
		t.Errorf("consume summary %q", consume.Outputs["summary"])
	}
	data := produce.Artifacts["data"][0]
	wantPrefix := "file://" + filepath.Join(work, "pipeline-root", "tiny-pipeline", res.Run.RunID, "produce") + "/"
	if !strings.HasPrefix(data.URI, wantPrefix) || !strings.HasSuffix(data.URI, "/data") || data.Metadata["rows"] != 4.0 {
		t.Errorf("data artifact %+v, want a URI under %s and rows 4", data, wantPrefix)
	}
	if b, err := os.ReadFile(strings.TrimPrefix(data.URI, "file://")); err != nil || strings.Count(string(b), "\n") != 4 {
		t.Errorf("data file: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "pvc", "tiny-claim", "shared", "message.txt")); err != nil || string(b) != "hello" {
		t.Errorf("claim file: %q %v", b, err)
	}
	if transform.Inputs["pvc_mount_path"] != filepath.Join(work, "pvc", "tiny-claim") {
		t.Errorf("transform's pvc_mount_path %v", transform.Inputs["pvc_mount_path"])
	}
	if !strings.Contains(strings.Join(produce.Notes, "\n"), "{{$.outputs.output_file}} resolved as kfp.local does") {
		t.Errorf("produce notes %q", produce.Notes)
	}
	for _, want := range []string{"[step 1/3] produce started", "[produce] produced 4 rows", "[step 2/3] transform succeeded in",
		"[transform] score 4", "[step 3/3] consume succeeded in", "stopped tiny-server",
		"warning: 1 processes started by the run's steps were still running"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(res.Summary); err != nil || !bytes.Contains(b, []byte(`"summary": "hello! 4"`)) {
		t.Errorf("summary %s: %v\n%s", res.Summary, err, b)
	}
	report, err := os.ReadFile(res.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiny-pipeline", "system.ClassificationMetrics", "<th>yes</th>", "srcdoc=\"&lt;h1&gt;tiny report", "<td class=\"num\">4</td>"} {
		if !bytes.Contains(report, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if serverGroup == 0 {
		t.Fatal("no server group recorded")
	}
	assertNothingLeft(t, work, mark, serverGroup)
	var text bytes.Buffer
	WriteText(&text, res)
	if !strings.Contains(text.String(), "score: 4") || !strings.Contains(text.String(), "yes") {
		t.Errorf("text summary:\n%s", text.String())
	}
}

func TestRunFailingTaskStopsTheRun(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	var out syncBuffer
	mark := markRun(t)
	res, err := Run(context.Background(), Options{
		Package: tinyPackage(t), WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second,
		Params: map[string]string{"message": "hi", "behave": "produce=serve,transform=fail"},
	})
	var se *StepError
	if !errors.As(err, &se) || se.Task != "transform" || se.ExitCode != 3 {
		t.Fatalf("err %v, want transform failing with exit code 3\n%s", err, out.String())
	}
	if tail := strings.Join(se.Tail, "\n"); !strings.Contains(tail, "the step fails on purpose") || !strings.Contains(tail, "line one before failing") {
		t.Errorf("log tail %q", tail)
	}
	if res.State != StateFailed || res.Tasks[1].State != StateFailed || res.Tasks[2].State != StatePending {
		t.Errorf("states run %s, tasks %s %s %s", res.State, res.Tasks[0].State, res.Tasks[1].State, res.Tasks[2].State)
	}
	for _, want := range []string{"[step 2/3] transform failed in", "exit status 3", "--- last 2 lines of transform ---", "stopped tiny-server"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(res.Report); err != nil {
		t.Errorf("no report after a failed run: %v", err)
	}
	assertNothingLeft(t, work, mark)
}

// TestRunInterrupted sends SIGINT to a run (a process running Run as the CLI does) while a step
// sleeps with a child that ignores SIGTERM, after an earlier step started a recorded server:
// the run exits non-zero and nothing it started is left.
func TestRunInterrupted(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pkgPath, _ := filepath.Abs("testdata/tiny-pipeline.yaml")
	cmd := exec.Command(self)
	mark := leaktest.New()
	cmd.Env = append(os.Environ(), mark.Env(), helperEnv+"=1", "LOCALRUN_PACKAGE="+pkgPath, "LOCALRUN_WORKDIR="+work, "LOCALRUN_BINDIR="+bin,
		"LOCALRUN_PARAMS=message=hi behave=produce=serve,transform=sleep")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard: the steps before it take seconds
	for !strings.Contains(out.String(), "[transform] sleeping") {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before the transform step slept:\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the transform step did not start sleeping:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	recs, _ := ReadProcesses(filepath.Join(work, "state"))
	if len(recs) != 1 {
		t.Fatalf("records %+v, want the tiny server", recs)
	}
	requireMarked(t, mark, recs[0].PID)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	t.Logf("interrupted run exited after %v", time.Since(start))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "transform stopped after") || !strings.Contains(out.String(), "stopped tiny-server") {
		t.Errorf("output:\n%s", out.String())
	}
	assertNothingLeft(t, work, mark, recs[0].PGID)
}

func TestRunKeepServing(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var url string
	done := make(chan error, 1)
	var out syncBuffer
	mark := markRun(t)
	go func() {
		_, err := Run(ctx, Options{
			Package: tinyPackage(t), WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second, KeepServing: true,
			Params: map[string]string{"message": "hi", "behave": "consume=serve"},
			Finished: func(r *Result) {
				if len(r.Processes) == 1 {
					url = r.Processes[0].URL
				}
			},
		})
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard: the run takes seconds
	for !strings.Contains(out.String(), "press Ctrl-C to stop") {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach serving:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Still serving after the run's tasks are done.
	time.Sleep(200 * time.Millisecond)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("server %q after the run: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	recs, _ := ReadProcesses(filepath.Join(work, "state"))
	if len(recs) == 1 {
		requireMarked(t, mark, recs[0].PID)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	assertNothingLeft(t, work, mark, recs[0].PGID)
}

func TestRunRefusesABusyWorkDir(t *testing.T) {
	work := t.TempDir()
	unlock, err := lockWorkDir(work)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = Run(context.Background(), Options{Package: tinyPackage(t), WorkDir: work, BinDir: work, Params: map[string]string{"message": "x"}})
	if err == nil || !strings.Contains(err.Error(), "in use by another local run") {
		t.Fatalf("err %v", err)
	}
}

func TestRunNamesAMissingBinary(t *testing.T) {
	work := t.TempDir()
	_, err := Run(context.Background(), Options{Package: tinyPackage(t), WorkDir: work, BinDir: work, Params: map[string]string{"message": "x"}})
	if err == nil || !strings.Contains(err.Error(), `image example.com/tiny:1 runs "produce"`) || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err %v", err)
	}
}
