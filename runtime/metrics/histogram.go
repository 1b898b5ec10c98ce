package metrics

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// histogram is a Prometheus histogram of fixed buckets over whole numbers (nanoseconds,
// rows), kept in stripes: each core adds to a stripe of its own (most of the time: see
// stripeToken), so cores recording at once do not take turns on one cache line. An observation
// is two atomic additions, its bucket's and the sum's; the count is the buckets' total.
type histogram struct {
	bounds  []uint64  // the finite buckets' upper bounds, in the observed unit
	les     []float64 // the same as exposed (le labels)
	perUnit float64   // observed units per exposed unit (1e9: nanoseconds observed, seconds exposed)
	stripes [][]atomic.Uint64
}

// A stripe holds a count per bucket (the +Inf bucket last), then the sum. Each is its own
// allocation of whole cache lines, so no two stripes share one.
const (
	cacheLine   = 64
	maxStripes  = 64
	uint64sLine = cacheLine / 8
)

// newHistogram makes a histogram with les as its buckets' upper bounds in the exposed unit,
// observing perUnit units for each.
func newHistogram(les []float64, perUnit float64) *histogram {
	h := &histogram{les: les, perUnit: perUnit, bounds: make([]uint64, len(les))}
	for i, le := range les {
		h.bounds[i] = uint64(math.Round(le * perUnit))
	}
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxStripes {
		n *= 2
	}
	size := (len(les) + 2 + uint64sLine - 1) / uint64sLine * uint64sLine
	h.stripes = make([][]atomic.Uint64, n)
	for i := range h.stripes {
		h.stripes[i] = make([]atomic.Uint64, size)
	}
	return h
}

func (h *histogram) observe(v uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	s := h.stripes[0]
	// With one core there is one stripe, and no token to take for it.
	if len(h.stripes) > 1 {
		t := stripeTokens.Get().(*stripeToken)
		s = h.stripes[t.n&(len(h.stripes)-1)]
		stripeTokens.Put(t)
	}
	s[i].Add(1)
	s[len(h.bounds)+1].Add(v)
}

// snapshot is what a scrape exposes: the count, the sum in the exposed unit and the
// cumulative count of each finite bucket. Observations landing meanwhile may be in the
// buckets and not yet in the sum, or the other way; the count always agrees with the buckets.
func (h *histogram) snapshot() (count uint64, sum float64, cumulative map[float64]uint64) {
	counts := make([]uint64, len(h.bounds)+1)
	var total uint64
	for _, s := range h.stripes {
		for i := range counts {
			counts[i] += s[i].Load()
		}
		total += s[len(h.bounds)+1].Load()
	}
	cumulative = make(map[float64]uint64, len(h.les))
	for i, le := range h.les {
		count += counts[i]
		cumulative[le] = count
	}
	count += counts[len(h.bounds)]
	return count, float64(total) / h.perUnit, cumulative
}

// stripeToken names a stripe. Tokens live in a sync.Pool, whose per-core caches give a core
// back the token it last put: the same stripe for the same core, without a way to ask which
// core a goroutine runs on.
type stripeToken struct{ n int }

var (
	stripeTokens = sync.Pool{New: func() any { return &stripeToken{n: int(nextStripe.Add(1))} }}
	nextStripe   atomic.Int64
)
