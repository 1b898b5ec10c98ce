// Package heapgoal keeps the Go collector's heap goal at a minimum size, so that a server whose
// live heap is small does not collect many times a second.
//
// Go collects when the heap reaches its goal: the live heap plus GOGC percent of it, and at least
// 4 MiB x GOGC/100. The runtime's live heap is about 1 MiB (its libraries' tables, the model, the
// connections' buffers), so under load it collected each time requests had allocated 3 MiB: 49
// times a second on one core at 60,000 one-row requests a second, 0.41 µs of collector CPU a
// request (0.22 µs for the bare net/http floor, which has less to mark), and 1.6 µs on two cores,
// where the collector's worker takes a quarter of the cores while it marks. With an 8 MiB goal the
// same load collects 2.3 times less often: 0.18 µs a request on one core, 0.61 µs on two, for
// 4 MiB more resident memory (measured 2026-12-07 on the 2-core VM, GODEBUG=gctrace=1).
//
// A GOGC large enough for that minimum would let a large heap, a model of hundreds of megabytes,
// grow to several times its size before a collection. So the percentage is set anew after every
// collection from the live heap it found: as high as the minimum needs while the live heap is
// small, GOGC's own once the live heap alone gives a goal above the minimum.
package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// defaultHeapMinimum is Go's smallest heap goal at GOGC=100 (runtime/mgcpacer.go): the goal is
// at least this x GOGC/100, so a percentage p also sets the goal of a tiny heap to this x p/100.
const defaultHeapMinimum = 4 << 20

// Percent is the GOGC percentage that gives a heap of live bytes a goal of at least minimum:
// base (GOGC's) when the live heap's own goal reaches it, at most what makes Go's smallest goal
// the minimum (higher would raise the goal of a small heap past it), and never below base.
func Percent(live, minimum uint64, base int) int {
	if base < 0 || minimum == 0 {
		return base // the collector is off, or no minimum
	}
	ceiling := max(base, int(minimum*100/defaultHeapMinimum))
	if live == 0 {
		return ceiling
	}
	if live >= minimum {
		return base
	}
	// The goal is live x (1 + p/100): p = 100 x (minimum - live) / live, rounded up.
	need := (100*(minimum-live) + live - 1) / live
	if need > uint64(ceiling) {
		return ceiling
	}
	return max(base, int(need))
}

// Keeper holds the collector's percentage at Percent of the live heap after each collection.
type Keeper struct {
	minimum uint64
	base    int // the percentage GOGC gave, restored by Stop

	mu      sync.Mutex
	stopped bool
	samples []metrics.Sample // the live heap and the percentage in force, read after each collection
}

// Keep starts holding the heap goal at minimum bytes or more (0: Go's own goal, and Keep does
// nothing). A GOGC the process was started with is the percentage for a live heap above the
// minimum; with GOGC=off there is no goal to hold and Keep does nothing.
func Keep(minimum uint64) *Keeper {
	k := &Keeper{minimum: minimum, samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}}
	metrics.Read(k.samples)
	k.base = percent(k.samples[1].Value)
	if minimum == 0 || k.base < 0 {
		k.stopped = true
		return k
	}
	k.adjust()
	k.arm()
	return k
}

// arm runs adjust after the next collection: a fresh object's cleanup runs once a collection
// has found it unreachable, and arms the next.
func (k *Keeper) arm() {
	sentinel := new(*byte) // holds a pointer: never placed in the tiny allocator's shared blocks
	runtime.AddCleanup(sentinel, func(k *Keeper) {
		if k.adjust() {
			k.arm()
		}
	}, k)
}

// adjust sets the percentage for the live heap the last collection found, and reports whether
// the keeper still runs.
func (k *Keeper) adjust() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return false
	}
	metrics.Read(k.samples)
	if p := Percent(k.samples[0].Value.Uint64(), k.minimum, k.base); p != percent(k.samples[1].Value) {
		debug.SetGCPercent(p)
	}
	return true
}

// percent is the GOGC percentage as /gc/gogc:percent reads it: an int32 read as a uint64, so
// GOGC=off's -1 reads as MaxUint64, whose low 32 bits are -1 again.
func percent(v metrics.Value) int {
	return int(int32(v.Uint64()))
}

// Stop gives the collector back GOGC's percentage.
func (k *Keeper) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.stopped = true
	debug.SetGCPercent(k.base)
}
