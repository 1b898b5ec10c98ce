package protocoltest

import (
	"math"
	"testing"
)

// The runtime holds Go's heap goal at --gc_min_heap_mib for its small live heap: Go's GOGC
// percentage, as the process's own metrics report it, is what an 8 MiB goal needs (200: Go's
// smallest goal is 4 MiB x GOGC/100), and Go's own 100 with the minimum off. A GOGC the
// container sets is the percentage the runtime starts from.
func TestHeapGoalMinimum(t *testing.T) {
	for _, c := range []struct {
		name, gogc string
		args       []string
		want       float64
	}{
		{"default minimum", "", nil, 200},
		{"minimum off", "", []string{"--gc_min_heap_mib=0"}, 100},
		{"16 MiB", "", []string{"--gc_min_heap_mib=16"}, 400},
		{"GOGC above what the minimum needs", "500", nil, 500},
		{"GOGC=off stays off", "off", nil, math.MaxUint64}, // -1, which Go's metrics read as a uint64
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc) // the server inherits the test's environment
			s := startIris(t, c.args...)
			if got := s.metric(t, "go_gc_gogc_percent"); got != c.want {
				t.Errorf("go_gc_gogc_percent %v, want %v", got, c.want)
			}
		})
	}
}
