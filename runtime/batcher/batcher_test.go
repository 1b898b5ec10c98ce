package batcher

import (
	"context"
	"fmt"
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
	// A goroutine that signalled its end may still be returning: wait for the count to settle,
	// with a minute's hang guard.
	for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > before+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines %d before 20 batchers, %d a minute after closing them", before, runtime.NumGoroutine())
		}
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

// A call that comes alone is evaluated at once, not held for others to join it: with a
// MaxDelay of an hour it is still answered.
func TestALoneCallIsNotHeldForOthers(t *testing.T) {
	b := New(rowSum{nf: 1}, Options{MaxBatchRows: 64, MaxDelay: time.Hour, Log: quiet()})
	for i := 0; i < 3; i++ {
		done := make(chan error, 1)
		go func() {
			got, err := b.PredictContext(context.Background(), nil, []float32{float32(i)}, 1, forest.OutputDefault)
			if err == nil && (len(got) != 1 || got[0] != float32(i)) {
				err = fmt.Errorf("answer %v, want [%d]", got, i)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("call %d, alone, still waiting after 60 s (MaxDelay is an hour)", i)
		}
	}
	b.Close() // not deferred: after a failure it would wait for the stuck call
}

// gated is rowSum that holds its first evaluation until release is closed, and records how
// many rows each evaluation got.
type gated struct {
	rowSum
	entered, release chan struct{}

	mu    sync.Mutex
	evals []int
}

func (g *gated) PredictContext(ctx context.Context, dst, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error) {
	g.mu.Lock()
	g.evals = append(g.evals, nrows)
	first := len(g.evals) == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	return g.rowSum.PredictContext(ctx, dst, rows, nrows, kind)
}

// The calls that arrive while a batch is evaluated form the next batch, all of them, each
// answered with its own rows.
func TestCallsQueuedDuringAnEvaluationFormTheNextBatch(t *testing.T) {
	g := &gated{rowSum: rowSum{nf: 1}, entered: make(chan struct{}), release: make(chan struct{})}
	b := New(g, Options{MaxBatchRows: 64, MaxDelay: time.Hour, Evaluators: 1, Log: quiet()})
	var wg sync.WaitGroup
	call := func(v float32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := b.PredictContext(context.Background(), nil, []float32{v, v}, 2, forest.OutputDefault)
			if err != nil || len(got) != 2 || got[0] != v || got[1] != v {
				t.Errorf("call %v: %v, %v", v, got, err)
			}
		}()
	}
	guard := time.After(60 * time.Second)
	call(100)
	select {
	case <-g.entered:
	case <-guard:
		t.Fatal("the first call not evaluated after 60 s")
	}
	const queued = 5
	for i := 0; i < queued; i++ {
		call(float32(i))
	}
	for q := b.queues[forest.OutputDefault]; len(q) < queued; {
		select {
		case <-guard:
			t.Fatalf("%d of %d calls queued after 60 s", len(q), queued)
		case <-time.After(time.Millisecond):
		}
	}
	close(g.release)
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-guard:
		t.Fatal("calls still waiting 60 s after the first evaluation ended (MaxDelay is an hour)")
	}
	b.Close() // not deferred: after a failure it would wait for the stuck calls
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.evals) != 2 || g.evals[0] != 2 || g.evals[1] != 2*queued {
		t.Fatalf("evaluations of %v rows; want [2 %d]: the first call alone, then the %d queued behind it together", g.evals, 2*queued, queued)
	}
}

// With two evaluators, a call is evaluated while another evaluation still runs: a model too
// large for one core's evaluations gets a second core.
func TestEvaluatorsRunBatchesAtOnce(t *testing.T) {
	g := &gated{rowSum: rowSum{nf: 1}, entered: make(chan struct{}), release: make(chan struct{})}
	b := New(g, Options{MaxBatchRows: 64, MaxDelay: time.Hour, Evaluators: 2, Log: quiet()})
	first := make(chan error, 1)
	go func() {
		_, err := b.PredictContext(context.Background(), nil, []float32{1}, 1, forest.OutputDefault)
		first <- err
	}()
	guard := time.After(60 * time.Second)
	select {
	case <-g.entered:
	case <-guard:
		t.Fatal("the first call not evaluated after 60 s")
	}
	second := make(chan error, 1)
	go func() {
		got, err := b.PredictContext(context.Background(), nil, []float32{2}, 1, forest.OutputDefault)
		if err == nil && (len(got) != 1 || got[0] != 2) {
			err = fmt.Errorf("answer %v, want [2]", got)
		}
		second <- err
	}()
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("second call: %v", err)
		}
	case <-guard:
		t.Fatal("the second call still waiting after 60 s while the first evaluation runs: one evaluator only")
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	b.Close()
}
