package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/ci"
)

var shared struct {
	c   *Cluster
	err error
}

// Main starts one control plane for all tests of a package, runs them and
// stops it; call it from TestMain. When the tools cannot be built or
// started, tests calling Require skip with the reason (fail in CI: see package ci);
// the start error is printed either way.
func Main(m *testing.M, opts Options) {
	os.Exit(runMain(m, opts))
}

func runMain(m *testing.M, opts Options) int {
	// The cold build of the tools takes about 25-45 minutes on 2 cores
	// (KServe's controller about 11 of them), some 12 more with Trainer v2
	// and JobSet on a loaded machine; the start itself well under a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	c, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: start failed: %v\n", err)
		shared.err = err
	}
	shared.c = c
	code := m.Run()
	if c != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "cluster: tests failed; component logs:\n%s\n", c.LogTails(60))
		}
		c.Stop()
	}
	return code
}

// Require returns the shared control plane started by Main. Without one it
// skips the test (tools cannot be built here) or fails it (in CI, or when
// the tools exist but the control plane did not start).
func Require(t testing.TB) *Cluster {
	t.Helper()
	switch {
	case shared.c != nil:
		if err := shared.c.CheckAlive(); err != nil {
			t.Fatalf("control plane component died: %v", err)
		}
		return shared.c
	case shared.err == nil:
		t.Fatal("cluster.Require: no control plane; call cluster.Main from TestMain")
	case errors.Is(shared.err, ErrTools) && !ci.Running():
		t.Skipf("control plane tools cannot be built here (CI=1 or CI=true would fail): %v", shared.err)
	case errors.Is(shared.err, ErrNoRealNodes) && !ci.Running():
		t.Skipf("this machine cannot run a real node (CI=1 or CI=true would fail): %v", shared.err)
	default:
		t.Fatalf("control plane did not start: %v", shared.err)
	}
	return nil
}
