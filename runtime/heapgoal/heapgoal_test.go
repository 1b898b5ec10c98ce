package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		name           string
		live, minimum  uint64
		base, expected int
	}{
		{"before the first collection: Go's smallest goal is the minimum", 0, 8 * mib, 100, 200},
		{"a small heap: the smallest goal is the minimum", 1 * mib, 8 * mib, 100, 200},
		{"live x (1 + p) reaches the minimum", 3 * mib, 8 * mib, 100, 167},
		{"the live heap's own goal is above the minimum", 5 * mib, 8 * mib, 100, 100},
		{"a live heap larger than the minimum", 300 * mib, 8 * mib, 100, 100},
		{"a GOGC above what the minimum needs stays", 1 * mib, 8 * mib, 400, 400},
		{"a GOGC below 100 for a large heap stays", 100 * mib, 8 * mib, 50, 50},
		{"a GOGC below 100 for a small heap", 1 * mib, 8 * mib, 50, 200},
		{"GOGC=off", 1 * mib, 8 * mib, -1, -1},
		{"no minimum", 1 * mib, 0, 100, 100},
		{"a minimum under Go's own smallest goal", 1 * mib, 2 * mib, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.live, c.minimum, c.base); got != c.expected {
				t.Errorf("Percent(%d MiB, %d MiB, %d) = %d, want %d", c.live/mib, c.minimum/mib, c.base, got, c.expected)
			}
		})
	}
}

// read is the collector's percentage and heap goal now.
func read() (gogc int, goal uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return percent(s[0].Value), s[1].Value.Uint64()
}

// collectUntil collects until the percentage is want: a keeper adjusts it after a collection,
// on the goroutine that runs cleanups. The deadline only guards against a hang.
func collectUntil(t *testing.T, want int, why string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		p, goal := read()
		if p == want {
			t.Logf("%s: GOGC %d, heap goal %.1f MiB", why, p, float64(goal)/mib)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC stays %d, want %d", why, p, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKeepFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	k := Keep(8 * mib)
	defer k.Stop()
	if p, goal := read(); p != 200 || goal < 8*mib {
		t.Fatalf("a test's small heap at start: GOGC %d and a goal of %d bytes, want 200 and 8 MiB or more", p, goal)
	}

	// A model of 64 MiB arrives: its own goal is far above the minimum, and GOGC's 100 holds
	// it to twice the live heap.
	model := make([]float32, 16*mib)
	collectUntil(t, 100, "64 MiB live")
	if _, goal := read(); goal > 2*(64+8)*mib {
		t.Errorf("64 MiB live: heap goal %.1f MiB, want about twice the live heap", float64(goal)/mib)
	}
	runtime.KeepAlive(model)

	model = nil
	collectUntil(t, 200, "the model gone")
	if _, goal := read(); goal < 8*mib {
		t.Errorf("the model gone: heap goal %.1f MiB, want 8 MiB or more", float64(goal)/mib)
	}

	k.Stop()
	runtime.GC()
	runtime.GC()
	if p, _ := read(); p != 100 {
		t.Errorf("after Stop: GOGC %d, want GOGC's own 100 back", p)
	}
}

func TestKeepLeavesGOGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	k := Keep(8 * mib)
	defer k.Stop()
	runtime.GC()
	if p, _ := read(); p != -1 {
		t.Errorf("GOGC=off: Keep set GOGC %d", p)
	}
}

func TestKeepWithoutMinimum(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	k := Keep(0)
	defer k.Stop()
	runtime.GC()
	if p, _ := read(); p != 100 {
		t.Errorf("no minimum: Keep set GOGC %d", p)
	}
}
