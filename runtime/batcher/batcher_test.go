package batcher

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gangboost/gangboost/runtime/forest"
)

// rowSum answers one value per row (the row's sum), and panics on a row starting with -1.
type rowSum struct{ nf int }

func (p rowSum) PredictContext(_ context.Context, dst, rows []float32, nrows int, _ forest.OutputKind) ([]float32, error) {
	for r := 0; r < nrows; r++ {
		row := rows[r*p.nf : (r+1)*p.nf]
		if row[0] == -1 {
			panic("poisoned row")
		}
		var s float32
		for _, v := range row {
			s += v
		}
		dst = append(dst, s)
	}
	return dst, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A panic in a merged evaluation runs in the batcher's goroutine, outside any handler: every
// call of that batch gets an error, and the batcher goes on serving.
func TestPanicInABatchAnswersItsCallsAndTheBatcherGoesOn(t *testing.T) {
	b := New(rowSum{nf: 2}, Options{MaxBatchRows: 64, MaxDelay: 20 * time.Millisecond, Log: quiet()})
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := []float32{float32(i), 1}
			if i == 3 {
				row[0] = -1
			}
			_, errs[i] = b.PredictContext(context.Background(), nil, row, 1, forest.OutputDefault)
		}()
	}
	wg.Wait()
	if errs[3] == nil || !strings.Contains(errs[3].Error(), "poisoned row") {
		t.Fatalf("poisoned call: err = %v, want the panic reported", errs[3])
	}
	got, err := b.PredictContext(context.Background(), nil, []float32{2, 3}, 1, forest.OutputDefault)
	if err != nil || len(got) != 1 || got[0] != 5 {
		t.Fatalf("after a panic: %v, %v; want [5]", got, err)
	}
}

func TestZeroRowsAndSplitAnswers(t *testing.T) {
	b := New(rowSum{nf: 1}, Options{MaxBatchRows: 64, MaxDelay: 10 * time.Millisecond, Log: quiet()})
	defer b.Close()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := i % 3 // 0, 1 or 2 rows
			rows := make([]float32, n)
			for k := range rows {
				rows[k] = float32(i*10 + k)
			}
			got, err := b.PredictContext(context.Background(), []float32{-7}, rows, n, forest.OutputDefault)
			if err != nil || len(got) != n+1 || got[0] != -7 {
				t.Errorf("call %d (%d rows): %v, %v", i, n, got, err)
				return
			}
			for k := 0; k < n; k++ {
				if got[k+1] != rows[k] {
					t.Errorf("call %d row %d: %v, want %v", i, k, got[k+1], rows[k])
				}
			}
		}()
	}
	wg.Wait()
}

// A caller whose context ends stops waiting; the batch still answers the others.
func TestCallerStopsOnItsContext(t *testing.T) {
	b := New(rowSum{nf: 1}, Options{MaxBatchRows: 64, MaxDelay: 200 * time.Millisecond, Log: quiet()})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.PredictContext(ctx, nil, []float32{1}, 1, forest.OutputDefault); err != context.Canceled {
		t.Fatalf("cancelled caller: err = %v", err)
	}
}

// Close ends the batcher's goroutines: a replaced model must not leave them behind.
func TestCloseEndsTheGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		b := New(rowSum{nf: 1}, Options{MaxBatchRows: 8, Log: quiet()})
		if _, err := b.PredictContext(context.Background(), nil, []float32{1}, 1, forest.OutputDefault); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Fatalf("goroutines %d before 20 batchers, %d after closing them", before, after)
	}
}

// Calls racing Close are all answered: none is left in a queue whose loop has already drained
// and ended.
func TestCallsRacingCloseAreAnswered(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for round := 0; round < 200; round++ {
			b := New(rowSum{nf: 1}, Options{MaxBatchRows: 64, MaxDelay: 50 * time.Microsecond, Log: quiet()})
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := b.PredictContext(context.Background(), nil, []float32{float32(i)}, 1, forest.OutputDefault)
					if err != nil || len(got) != 1 || got[0] != float32(i) {
						t.Errorf("call %d: %v, %v", i, got, err)
					}
				}()
			}
			b.Close()
			wg.Wait()
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("calls racing Close still waiting after 60s")
	}
}
