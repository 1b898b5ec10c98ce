package train

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The tracker's address as libxgboost gets it: an IP is kept, a name becomes its address, and a
// name that never resolves fails after the timeout, naming the host (libxgboost would dial an
// empty address instead).
func TestTrackerIP(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"10.244.0.7", "10.244.0.7"},
		{"fd00::7", "fd00::7"},
		{"localhost", "127.0.0.1"},
	} {
		got, err := trackerIP(context.Background(), tc.host, time.Second)
		if err != nil || got != tc.want {
			t.Errorf("trackerIP(%s) = %q, %v; want %s", tc.host, got, err, tc.want)
		}
	}
	t0 := time.Now()
	_, err := trackerIP(context.Background(), "gangboost-tracker.invalid", 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "tracker host gangboost-tracker.invalid did not resolve within 600ms") {
		t.Errorf("unresolvable host: %v", err)
	}
	if took := time.Since(t0); took < 500*time.Millisecond {
		t.Errorf("gave up after %s, before its timeout", took)
	}
}
