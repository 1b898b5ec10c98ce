package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/test/testbin"
)

// train writes an Iris model of rounds rounds to claim/models/iris/<version>.
func train(t *testing.T, claim, version string, rounds int) {
	t.Helper()
	dir := filepath.Join(claim, "models", "iris", version)
	out, err := exec.Command(testbin.Installed(t, "gangboost-train"), "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", fmt.Sprint(rounds), "--max-depth", "3", "--nthread", "1", "--model-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("train %s: %v\n%s", dir, err, out)
	}
}

func service(claim, name, uri string) *deploy.Service {
	s := &deploy.Service{Name: name, Namespace: "local", ModelURI: uri, MountPath: claim,
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "1", Memory: "1Gi",
		MinReplicas: 1, MaxReplicas: 1, Timeout: 2 * time.Minute} // a hang guard: ready within a second
	s.Claim, s.ModelPath, _ = deploy.ParseModelURI(uri)
	return s
}

var irisRows = []float32{5.1, 3.5, 1.4, 0.2, 5.9, 3.0, 4.2, 1.5, 6.7, 3.0, 5.2, 2.3}

// infer posts the Iris rows to a V2 REST endpoint and returns output-0.
func infer(hc *http.Client, url, model string) ([]float32, error) {
	body, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{
		"name": "input-0", "datatype": "FP32", "shape": []int{3, 4}, "data": irisRows}}})
	resp, err := hc.Post(url+"/v2/models/"+model+"/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Error   string `json:"error"`
		Outputs []struct {
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || len(out.Outputs) == 0 {
		return nil, fmt.Errorf("%s: %s", resp.Status, out.Error)
	}
	return out.Outputs[0].Data, nil
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// stopRecorded stops the process a record names, as the local runner does at the end of a run.
func stopRecorded(t *testing.T, state, name string) {
	if r, err := ReadRecord(state, name); err == nil {
		_ = procgroup.Signal(r.PGID, syscall.SIGKILL)
	}
}

// TestLocalRollout: a model served under a name, then a second version deployed onto the same
// name while a client keeps calling the service it finds in the record: no call fails, the
// answers switch from the first model's to the second's, the first process is gone, and the
// record and the outputs name the second.
func TestLocalRollout(t *testing.T) {
	claim, state := t.TempDir(), t.TempDir()
	train(t, claim, "v1", 20)
	train(t, claim, "v2", 3)
	// The old version serves 3 s past the switch: a calling goroutine that read the old record
	// just before it may be held that long by a busy machine before its call.
	b := &Backend{Runtime: testbin.Installed(t, "gangboost-runtime"), StateDir: state, StopTimeout: 5 * time.Second, SwitchGrace: 3 * time.Second}
	t.Cleanup(func() { stopRecorded(t, state, "iris") })
	var log strings.Builder
	d := &deploy.Deployer{Backend: b, Log: &log}
	ctx := context.Background()

	start := time.Now()
	ep1, err := d.Run(ctx, service(claim, "iris", "pvc://models-claim/models/iris/v1"))
	if err != nil {
		t.Fatalf("deploy v1: %v\n%s", err, log.String())
	}
	t.Logf("v1 ready after %s at %s", time.Since(start).Round(time.Millisecond), ep1.URL)
	rec1, err := ReadRecord(state, "iris")
	if err != nil {
		t.Fatal(err)
	}
	if rec1.URL != ep1.URL || rec1.GRPC != ep1.GRPCAddress || ep1.ExternalURL != ep1.URL || ep1.ModelName != "iris" ||
		rec1.PGID != rec1.PID || !strings.HasPrefix(ep1.URL, "http://127.0.0.1:") || !strings.HasPrefix(ep1.GRPCAddress, "127.0.0.1:") {
		t.Fatalf("endpoint %+v, record %+v", ep1, rec1)
	}
	if pgid, err := syscall.Getpgid(rec1.PID); err != nil || pgid != rec1.PID {
		t.Errorf("runtime pid %d: process group %d (%v), want its own", rec1.PID, pgid, err)
	}
	hc := &http.Client{Timeout: time.Minute} // a hang guard: a call takes milliseconds
	v1, err := infer(hc, ep1.URL, "iris")
	if err != nil {
		t.Fatal(err)
	}

	// The client reads the record before every call, as the local runner's users do.
	var (
		calls    atomic.Int64
		mu       sync.Mutex
		failures []string
		answers  [][]float32
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, err := ReadRecord(state, "iris")
			var got []float32
			if err == nil {
				got, err = infer(hc, r.URL, "iris")
			}
			calls.Add(1)
			mu.Lock()
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				answers = append(answers, got)
			}
			mu.Unlock()
		}
	}()
	// answered waits until the client has had an answer that ok accepts (or a call failed, which
	// the checks below report), so that the rollout happens between calls however slow they are.
	answered := func(what string, ok func([]float32) bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a hang guard
			mu.Lock()
			found := len(failures) > 0 || slices.ContainsFunc(answers, ok)
			mu.Unlock()
			if found {
				return
			}
			if time.Now().After(deadline) {
				close(stop)
				<-done
				t.Fatalf("the client had no answer from %s after a minute (%d calls)", what, calls.Load())
			}
		}
	}
	answered("v1", func(a []float32) bool { return same(a, v1) })
	start = time.Now()
	ep2, err := d.Run(ctx, service(claim, "iris", "pvc://models-claim/models/iris/v2"))
	if err != nil {
		close(stop)
		<-done
		t.Fatalf("deploy v2: %v\n%s", err, log.String())
	}
	t.Logf("rolled out to v2 in %s", time.Since(start).Round(time.Millisecond))
	v2, err := infer(hc, ep2.URL, "iris")
	if err != nil {
		close(stop)
		<-done
		t.Fatal(err)
	}
	answered("v2", func(a []float32) bool { return same(a, v2) })
	close(stop)
	<-done

	if same(v1, v2) {
		t.Fatalf("the two models answer alike (%v): the rollout cannot be seen", v1)
	}
	if ep2.URL == ep1.URL {
		t.Errorf("v2 on the same URL %s as v1", ep1.URL)
	}
	rec2, err := ReadRecord(state, "iris")
	if err != nil || rec2.URL != ep2.URL || rec2.PID == rec1.PID {
		t.Errorf("record after the rollout = %+v, %v; want v2's at %s", rec2, err, ep2.URL)
	}
	if procgroup.Alive(rec1.PID) {
		t.Errorf("v1's runtime (pid %d) still runs after the rollout", rec1.PID)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("%d of %d calls failed during the rollout, first: %s", len(failures), calls.Load(), failures[0])
	}
	sawV1, sawV2, switched := 0, 0, false
	for _, a := range answers {
		switch {
		case same(a, v1):
			if switched {
				t.Fatalf("an answer of v1 after v2 had answered")
			}
			sawV1++
		case same(a, v2):
			switched = true
			sawV2++
		default:
			t.Fatalf("answer %v is neither v1's %v nor v2's %v", a, v1, v2)
		}
	}
	t.Logf("%d calls during the rollout: %d answered by v1, %d by v2, %d failed", calls.Load(), sawV1, sawV2, len(failures))
	if sawV1 == 0 || sawV2 == 0 {
		t.Errorf("answers by v1 %d, by v2 %d: want both", sawV1, sawV2)
	}
	for _, want := range []string{"runtime: ready", "rollout: iris now served by pid", "previous version (pid"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, log.String())
		}
	}
	if _, err := os.Stat(LogPath(state, "iris")); err != nil {
		t.Errorf("the runtime's log: %v", err)
	}
}

// TestLocalMissingModel: a model folder without a model fails at once with the runtime's reason
// naming the folder and its log, while the version already serving keeps serving; a folder that
// does not exist fails before anything starts.
func TestLocalMissingModel(t *testing.T) {
	claim, state := t.TempDir(), t.TempDir()
	train(t, claim, "v1", 3)
	if err := os.MkdirAll(filepath.Join(claim, "models", "missing", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &Backend{Runtime: testbin.Installed(t, "gangboost-runtime"), StateDir: state, StopTimeout: 5 * time.Second}
	t.Cleanup(func() { stopRecorded(t, state, "iris") })
	var log strings.Builder
	d := &deploy.Deployer{Backend: b, Log: &log}
	ctx := context.Background()
	ep, err := d.Run(ctx, service(claim, "iris", "pvc://c/models/iris/v1"))
	if err != nil {
		t.Fatalf("deploy v1: %v\n%s", err, log.String())
	}
	serving, _ := ReadRecord(state, "iris")

	// A readiness timeout far beyond the hang guard: the runtime's reason can only come back
	// (rather than the guard's context deadline) if the failed load ended the wait at once.
	missing := service(claim, "iris", "pvc://c/models/missing/v1")
	missing.Timeout = 10 * time.Minute
	guard, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = d.Run(guard, missing)
	took := time.Since(start)
	var nr *deploy.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("error = %v, want a NotReadyError", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the deploy waited for its deadline; a failed load is final and should end the wait at once: %v", err)
	}
	t.Logf("failed after %s:\n%v", took.Round(time.Millisecond), err)
	dir := filepath.Join(claim, "models", "missing", "v1")
	for _, want := range []string{"no model file in " + dir, "log tail (" + FailedLogPath(state, "iris") + ")", `"msg":"not ready"`,
		"the previous version (pid " + fmt.Sprint(serving.PID)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if r, _ := ReadRecord(state, "iris"); r == nil || r.PID != serving.PID {
		t.Errorf("record = %+v, want the serving version's %+v", r, serving)
	}
	if _, err := infer(&http.Client{Timeout: time.Minute}, ep.URL, "iris"); err != nil {
		t.Errorf("v1 no longer serves after the failed deploy: %v", err)
	}

	_, err = d.Run(ctx, service(claim, "iris", "pvc://c/models/absent/v1"))
	if err == nil || !strings.Contains(err.Error(), "model folder "+filepath.Join(claim, "models", "absent", "v1")+" does not exist") {
		t.Errorf("error = %v, want it to name the missing folder", err)
	}
}
