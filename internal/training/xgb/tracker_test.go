package xgb

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
)

// freePort is a port for the tracker, outside the ephemeral range: libxgboost binds it later,
// and one from ":0" may meanwhile become another connection's source port.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Three workers, each a goroutine locked to its own OS thread (libxgboost's communicator is
// thread-local), join libxgboost's tracker and sum float64 vectors: every worker gets the sum of
// all three, and the tracker ends cleanly once they leave.
func TestTrackerGangAllreduce(t *testing.T) {
	const workers = 3
	port := freePort(t)
	tr, err := StartTracker(TrackerConfig{Workers: workers, Host: "127.0.0.1", Port: port, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	args, err := tr.WorkerArgs()
	if err != nil {
		t.Fatal(err)
	}
	if args["dmlc_tracker_uri"] != "127.0.0.1" || fmt.Sprint(args["dmlc_tracker_port"]) != fmt.Sprint(port) {
		t.Fatalf("worker args %v, want dmlc_tracker_uri 127.0.0.1 and dmlc_tracker_port %d", args, port)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	ranks := make([]int, workers)
	sums := make([][]float64, workers)
	for task := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			err := CommunicatorInit(map[string]any{"dmlc_communicator": "rabit", "dmlc_tracker_uri": "127.0.0.1",
				"dmlc_tracker_port": port, "dmlc_task_id": fmt.Sprint(task)})
			if err != nil {
				errs[task] = err
				return
			}
			ranks[task] = Rank()
			v := []float64{float64(task) + 0.25, 1e300 / 4}
			errs[task] = AllreduceSumFloat64(v)
			sums[task] = v
			if err := CommunicatorFinalize(); err != nil && errs[task] == nil {
				errs[task] = err
			}
		}()
	}
	wg.Wait()
	for task := range workers {
		if errs[task] != nil {
			t.Fatalf("worker %d: %v", task, errs[task])
		}
		if ranks[task] != task {
			t.Errorf("worker with dmlc_task_id %d got rank %d (the tracker sorts by task id)", task, ranks[task])
		}
		if want := []float64{0.75 + 3, 3e300 / 4}; sums[task][0] != want[0] || sums[task][1] != want[1] {
			t.Errorf("worker %d: sum %v, want %v", task, sums[task], want)
		}
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute): // hang guard only
		t.Fatal("the tracker did not finish after every worker left")
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	tr.Free()
}

func TestBuildInfo(t *testing.T) {
	info, err := BuildInfo()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info["USE_CUDA"].(bool); !ok {
		t.Fatalf("XGBuildInfo has no boolean USE_CUDA: %v", info)
	}
}
