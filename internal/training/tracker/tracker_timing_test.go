package tracker

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRendezvous measures a whole job's tracker work: N workers join,
// link to their peers over loopback and shut down.
func BenchmarkRendezvous(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ids := numericIDs(n)
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				tr, err := Start(ctx, "127.0.0.1:0", n)
				if err != nil {
					b.Fatal(err)
				}
				workers, err := runJob(ctx, tr.Addr().String(), ids, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, w := range workers {
					if err := w.shutdown(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := tr.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				tr.Close()
				cancel()
			}
		})
	}
}
