package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// BinDir is where `make build` puts gangboost's binaries, which the pod runner runs for the
// images of the tests: $GANGBOOST_BIN_DIR, else <repo>/bin.
func BinDir() string {
	if d := os.Getenv("GANGBOOST_BIN_DIR"); d != "" {
		return d
	}
	root, err := RepoRoot()
	if err != nil {
		return "bin"
	}
	return filepath.Join(root, "bin")
}

// WaitFor polls cond every 100 ms until it is true, and fails t naming desc and cond's last
// error when timeout passes first. An error from cond is kept as the reason and polling goes on:
// objects a controller has yet to create are the normal case while waiting.
func WaitFor(t testing.TB, timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, desc, last)
	}
}
