package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/ci"
)

// These tests run real libxgboost 1.7 workers: Debian's python3-xgboost,
// whose collective module drives libxgboost's rabit client through the C API
// (XGCommunicatorInit / Allreduce / Print / Finalize).

// xgboostPython returns a Python interpreter that can import xgboost and
// numpy. Debian's /usr/bin/python3 comes first: a python3 earlier on PATH
// (pyenv, a virtualenv) usually cannot see Debian's dist-packages.
func xgboostPython(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping tests that run libxgboost worker processes")
	}
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var tried []string
	for _, py := range candidates {
		out, err := exec.Command(py, "-c", "import numpy, xgboost; print(xgboost.__version__)").CombinedOutput()
		if err == nil {
			t.Logf("libxgboost workers: %s, xgboost %s", py, strings.TrimSpace(string(out)))
			return py
		}
		tried = append(tried, fmt.Sprintf("%s: %v", py, err))
	}
	if ci.Running() {
		t.Fatalf("no python3 with xgboost and numpy, which CI must have (scripts/deps.sh installs python3-xgboost and python3-numpy); tried %s",
			strings.Join(tried, "; "))
	}
	t.Skipf("no python3 with xgboost and numpy (python3-xgboost, python3-numpy from Debian; CI=1 or CI=true would fail); tried %s",
		strings.Join(tried, "; "))
	return ""
}

type workerResult struct {
	Rank      int       `json:"rank"`
	World     int       `json:"world"`
	SmallSum  []float64 `json:"small_sum"`
	BigSumMin float64   `json:"big_sum_min"`
	BigSumMax float64   `json:"big_sum_max"`
	MaxRank   int       `json:"max_rank"`
	Model     string    `json:"model"`
	// ShardModel is trained on the same shard after finalize, alone.
	ShardModel string `json:"shard_model"`
}

// pyWorker is one libxgboost worker process.
type pyWorker struct {
	cmd    *exec.Cmd
	output bytes.Buffer // stdout and stderr
	out    string       // result JSON path
}

// startPythonWorkers starts one rabit worker process per task id, in order.
func startPythonWorkers(ctx context.Context, t *testing.T, py string, port int, taskIDs []string, mode string) []*pyWorker {
	t.Helper()
	dir := t.TempDir()
	procs := make([]*pyWorker, len(taskIDs))
	for i, id := range taskIDs {
		p := &pyWorker{out: filepath.Join(dir, fmt.Sprintf("worker-%d.json", i))}
		p.cmd = exec.CommandContext(ctx, py, "testdata/rabit_worker.py",
			"127.0.0.1", strconv.Itoa(port), id, mode, p.out)
		// One thread per worker: the machine may have two cores for N workers.
		p.cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
		p.cmd.Stdout = &p.output
		p.cmd.Stderr = &p.output
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	return procs
}

// runPythonJob runs a whole job of rabit worker processes against a tracker,
// waits for the tracker and every process, and returns the results indexed
// like taskIDs.
func runPythonJob(t *testing.T, py string, taskIDs []string, mode string) ([]workerResult, *logRecorder) {
	t.Helper()
	n := len(taskIDs)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rec := &logRecorder{}
	tr, err := Start(ctx, "127.0.0.1:0", n,
		WithLogger(slog.New(rec)), WithStartTimeout(time.Minute), WithShutdownTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	procs := startPythonWorkers(ctx, t, py, tr.Addr().(*net.TCPAddr).Port, taskIDs, mode)
	trackerErr := tr.Wait(ctx)
	var procErrs []error
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			procErrs = append(procErrs, fmt.Errorf("worker %d (task %s): %v\n%s", i, taskIDs[i], err, p.output.String()))
		}
	}
	if trackerErr != nil || len(procErrs) > 0 {
		t.Fatalf("tracker: %v\nworkers: %v", trackerErr, errors.Join(procErrs...))
	}
	results := make([]workerResult, n)
	for i, p := range procs {
		raw, err := os.ReadFile(p.out)
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, p.output.String())
		}
		if err := json.Unmarshal(raw, &results[i]); err != nil {
			t.Fatalf("%s: %v", p.out, err)
		}
	}
	return results, rec
}

func TestLibxgboostAllreduce(t *testing.T) {
	py := xgboostPython(t)
	tests := []struct {
		name    string
		taskIDs []string // launch order
	}{
		{"n=1", []string{"0"}},
		{"n=2", []string{"1", "0"}},
		{"n=3", []string{"2", "0", "1"}},
		{"n=4", []string{"3", "2", "1", "0"}},
		{"n=3 without task ids", []string{"-", "-", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			results, rec := runPythonJob(t, py, tt.taskIDs, "allreduce")
			n := len(tt.taskIDs)
			wantSum := float64(n * (n + 1) / 2)
			var ranks []int
			for i, r := range results {
				if id, err := strconv.Atoi(tt.taskIDs[i]); err == nil && r.Rank != id {
					t.Errorf("task %d got rank %d", id, r.Rank)
				}
				ranks = append(ranks, r.Rank)
				if r.World != n {
					t.Errorf("rank %d: world size %d, want %d", r.Rank, r.World, n)
				}
				if !slices.Equal(r.SmallSum, []float64{wantSum, float64(n)}) {
					t.Errorf("rank %d: tree allreduce sum %v, want [%v %d]", r.Rank, r.SmallSum, wantSum, n)
				}
				if r.BigSumMin != wantSum || r.BigSumMax != wantSum {
					t.Errorf("rank %d: ring allreduce sum in [%v, %v], want %v", r.Rank, r.BigSumMin, r.BigSumMax, wantSum)
				}
				if r.MaxRank != n-1 {
					t.Errorf("rank %d: max allreduce %d, want %d", r.Rank, r.MaxRank, n-1)
				}
				msg := fmt.Sprintf("rank %d of %d reduced", r.Rank, n)
				if rank, ok := rec.find(msg); !ok || rank != r.Rank {
					t.Errorf("print %q: logged=%v with rank %d", msg, ok, rank)
				}
			}
			slices.Sort(ranks)
			for i, r := range ranks {
				if r != i {
					t.Fatalf("ranks %v, want 0..%d once each", ranks, n-1)
				}
			}
			t.Logf("%d workers: %s", n, time.Since(began).Round(time.Millisecond))
		})
	}
}

// Data-parallel training over the tracker's links: both ranks must end with
// the same model, and it must differ from what each shard gives alone.
func TestLibxgboostDistributedTraining(t *testing.T) {
	py := xgboostPython(t)
	results, _ := runPythonJob(t, py, []string{"0", "1"}, "train")
	for _, r := range results {
		if !strings.Contains(r.Model, `"learner"`) {
			t.Fatalf("rank %d wrote no model: %.200q", r.Rank, r.Model)
		}
		if r.Model == r.ShardModel {
			t.Errorf("rank %d: distributed model equals its shard's model: the ranks did not train together", r.Rank)
		}
	}
	if results[0].Model != results[1].Model {
		t.Fatalf("ranks ended with different models (%d vs %d bytes)", len(results[0].Model), len(results[1].Model))
	}
}

// A rank killed mid-job: the survivors' collective calls fail at once, they
// finalize (which sends shutdown), and the tracker names the rank that never
// shut down.
func TestLibxgboostLostWorker(t *testing.T) {
	py := xgboostPython(t)
	const shutdownTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rec := &logRecorder{}
	tr, err := Start(ctx, "127.0.0.1:0", 3, WithLogger(slog.New(rec)),
		WithStartTimeout(time.Minute), WithShutdownTimeout(shutdownTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	procs := startPythonWorkers(ctx, t, py, tr.Addr().(*net.TCPAddr).Port, []string{"0", "1", "2"}, "loop")
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}()
	// Every rank says it is looping (a print through the tracker) before
	// rank 2 is killed.
	for r := range 3 {
		msg := fmt.Sprintf("rank %d looping", r)
		for {
			if _, ok := rec.find(msg); ok {
				break
			}
			select {
			case <-tr.Done():
				t.Fatalf("tracker ended before %q: %v", msg, tr.Wait(ctx))
			case <-ctx.Done():
				t.Fatalf("no %q: %v", msg, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	killed := time.Now()
	if err := procs[2].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = tr.Wait(ctx)
	elapsed := time.Since(killed)
	var lost *LostError
	if !errors.As(err, &lost) || len(lost.Workers) != 1 || lost.Workers[0].Rank != 2 {
		t.Fatalf("Wait = %v, want a *LostError naming rank 2", err)
	}
	// The survivors' shutdowns started the shutdown timer, which named the lost rank (ctx, the
	// hang guard, would have ended the wait with ErrClosed instead). The timer starts after the
	// kill and cannot fire early; how late the report comes depends on the machine and is logged.
	if want := fmt.Sprintf("no shutdown within %s after the first rank shut down", shutdownTimeout); lost.Reason != want {
		t.Errorf("lost rank reported because %q, want %q", lost.Reason, want)
	}
	if elapsed < shutdownTimeout {
		t.Errorf("lost rank reported %s after the kill, before the %s shutdown timeout", elapsed, shutdownTimeout)
	}
	for r, p := range procs[:2] {
		if err := p.cmd.Wait(); err == nil {
			t.Errorf("rank %d exited 0 after its peer was killed\n%s", r, p.output.String())
		}
	}
	t.Logf("%v (%s after the kill)", err, elapsed.Round(time.Millisecond))
}
