package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// An Abort error from the condition ends the wait at once with that error; a plain error is a
// reason to keep polling, reported only at the timeout.
func TestPollAbort(t *testing.T) {
	calls := 0
	err := poll(time.Minute, "the service", func(context.Context) (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("not created yet")
		}
		return false, Abort(fmt.Errorf("iris is Ready without a model"))
	})
	if err == nil || !strings.Contains(err.Error(), "while waiting for the service: iris is Ready without a model") {
		t.Fatalf("poll = %v; want the aborting error", err)
	}
	if calls != 3 {
		t.Errorf("poll returned after %d calls; want at the third, the first aborting one", calls)
	}

	// Two seconds of 100 ms polls: a busy machine still calls more than once.
	calls = 0
	err = poll(2*time.Second, "the service", func(context.Context) (bool, error) {
		calls++
		return false, errors.New("not created yet")
	})
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s waiting for the service (last error: not created yet)") || calls < 2 {
		t.Errorf("poll = %v after %d calls; want a timeout naming the last error, after polling on", err, calls)
	}
}
