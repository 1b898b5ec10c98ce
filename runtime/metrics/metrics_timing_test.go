package metrics

import (
	"testing"
	"time"
)

// BenchmarkObserveRequest times what every request adds to the metrics (its count and latency
// under its labels, and the rows of its evaluation), from every core at once.
func BenchmarkObserveRequest(b *testing.B) {
	m := New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveBatch(1)
			m.ObserveRequest("iris", "v2", "200", 20*time.Microsecond)
		}
	})
}
