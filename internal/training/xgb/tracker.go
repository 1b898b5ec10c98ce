package xgb

// #include <stdlib.h>
// #include <xgboost/c_api.h>
// char* gb_build_info(char** out);
// char* gb_tracker_create(const char* cfg, TrackerHandle* out);
// char* gb_tracker_run(TrackerHandle h);
// char* gb_tracker_worker_args(TrackerHandle h, char** out);
// char* gb_tracker_wait(TrackerHandle h);
// char* gb_tracker_free(TrackerHandle h);
import "C"

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// BuildInfo is libxgboost's XGBuildInfo: how the linked library was built (USE_CUDA, USE_NCCL,
// USE_OPENMP, compiler and glibc versions), as the JSON object it returns.
func BuildInfo() (map[string]any, error) {
	var out *C.char
	if err := check(C.gb_build_info(&out)); err != nil {
		return nil, fmt.Errorf("XGBuildInfo: %w", err)
	}
	defer C.free(unsafe.Pointer(out))
	var info map[string]any
	if err := json.Unmarshal([]byte(C.GoString(out)), &info); err != nil {
		return nil, fmt.Errorf("XGBuildInfo: %w", err)
	}
	return info, nil
}

// Tracker is libxgboost's own rabit tracker (XGTrackerCreate ... XGTrackerFree), the rendezvous
// every worker's CommunicatorInit connects to: it hands out ranks and the ring and tree links,
// relays the workers' print messages, and ends when every worker has sent its shutdown.
type Tracker struct {
	mu   sync.Mutex
	h    C.TrackerHandle
	done chan struct{}
	err  error
}

// TrackerConfig is XGTrackerCreate's configuration for a rabit tracker.
type TrackerConfig struct {
	// Workers is n_workers, the size of the gang.
	Workers int
	// Host is the address the tracker names in WorkerArgs (dmlc_tracker_uri); it listens on every
	// interface whatever Host says.
	Host string
	// Port is the port it listens on.
	Port int
	// Timeout bounds the tracker's network waits: the workers' connections, the bootstrap.
	Timeout time.Duration
}

// StartTracker creates the tracker and starts it in the background (XGTrackerRun).
func StartTracker(c TrackerConfig) (*Tracker, error) {
	cfg, err := json.Marshal(map[string]any{
		"dmlc_communicator": "rabit",
		"n_workers":         c.Workers,
		"host":              c.Host,
		"port":              c.Port,
		"timeout":           max(1, int((c.Timeout+time.Second-1)/time.Second)),
		// Ranks follow dmlc_task_id (the RANK every pod is given), not host names: rank 0 is
		// the pod that runs the tracker and writes the model.
		"sortby": 1,
	})
	if err != nil {
		return nil, err
	}
	cs := C.CString(string(cfg))
	defer C.free(unsafe.Pointer(cs))
	t := &Tracker{done: make(chan struct{})}
	if err := check(C.gb_tracker_create(cs, &t.h)); err != nil {
		return nil, fmt.Errorf("create tracker %s: %w", cfg, err)
	}
	if err := check(C.gb_tracker_run(t.h)); err != nil {
		C.gb_tracker_free(t.h)
		return nil, fmt.Errorf("run tracker on port %d: %w", c.Port, err)
	}
	go func() {
		// XGTrackerWaitFor blocks until every worker has shut down or the tracker failed.
		t.err = check(C.gb_tracker_wait(t.h))
		close(t.done)
	}()
	return t, nil
}

// WorkerArgs is XGTrackerWorkerArgs: the CommunicatorInit keys that reach this tracker.
func (t *Tracker) WorkerArgs() (map[string]any, error) {
	var out *C.char
	if err := check(C.gb_tracker_worker_args(t.h, &out)); err != nil {
		return nil, fmt.Errorf("tracker worker args: %w", err)
	}
	defer C.free(unsafe.Pointer(out))
	var args map[string]any
	if err := json.Unmarshal([]byte(C.GoString(out)), &args); err != nil {
		return nil, fmt.Errorf("tracker worker args: %w", err)
	}
	return args, nil
}

// Done is closed when the tracker has finished; Err then says how.
func (t *Tracker) Done() <-chan struct{} { return t.done }

// Err is the tracker's outcome once Done is closed: nil when every worker shut down.
func (t *Tracker) Err() error {
	<-t.done
	if t.err != nil {
		return fmt.Errorf("tracker: %w", t.err)
	}
	return nil
}

// Free releases a finished tracker (XGTrackerFree). A tracker that has not finished is left to
// the process's exit: freeing it would close the connections libxgboost's waiting thread still
// uses.
func (t *Tracker) Free() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		if t.h != nil {
			C.gb_tracker_free(t.h)
			t.h = nil
		}
	default:
	}
}
