// Package batcher merges concurrent small inference calls into one evaluation, so many
// single-row requests share one pass over the trees. KServe's own batcher works on V1
// "instances" bodies and does not understand V2, so the runtime batches itself.
package batcher

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gangboost/gangboost/runtime/forest"
)

// Options bound a batch: it is evaluated once no other call is on its way (see gather), or
// when it holds MaxBatchRows rows, or when MaxDelay has passed since its first call, whichever
// comes first.
type Options struct {
	MaxBatchRows int
	MaxDelay     time.Duration
	// Evaluators is how many merged evaluations of one output kind may run at once, each
	// gathering its own batch; 0: GOMAXPROCS, so that batches of a model too large for one
	// core's evaluations use every core the server has.
	Evaluators int
	// MinRowCost batches only a model whose one-row evaluation takes at least this long
	// (service.NewPredictor times it at load; 0: every model): batching pays for large models
	// under concurrent load and costs small ones (runtime/README.md, "Batching").
	MinRowCost time.Duration
	Log        *slog.Logger // where a recovered panic and a model's batching choice are reported; nil: slog.Default()
}

// Predictor is what the batcher calls with merged rows.
type Predictor interface {
	PredictContext(ctx context.Context, dst []float32, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error)
}

type call struct {
	rows  []float32
	nrows int
	dst   []float32
	done  chan result // buffered: the loop never blocks on a caller that gave up
}

type result struct {
	vals []float32
	err  error
}

// kinds are the outputs batched; each has its own queue, since a merged evaluation computes
// one output kind.
var kinds = []forest.OutputKind{forest.OutputDefault, forest.OutputMargin, forest.OutputProba,
	forest.OutputLabel, forest.OutputLeaf, forest.OutputContribs}

// Batcher merges calls per output kind. Close stops its goroutines.
type Batcher struct {
	next   Predictor
	opts   Options
	queues map[forest.OutputKind]chan *call
	stop   chan struct{}
	wg     sync.WaitGroup

	// mu orders enqueueing against Close: callers enqueue under the read lock, Close takes the
	// write lock before it stops the loops, so every queued call is queued before the loops'
	// final drain and none is left in a queue nobody reads.
	mu     sync.RWMutex
	closed bool
}

// New starts a batcher in front of next.
func New(next Predictor, o Options) *Batcher {
	if o.MaxDelay <= 0 {
		o.MaxDelay = time.Millisecond
	}
	if o.MaxBatchRows <= 0 {
		o.MaxBatchRows = 1
	}
	if o.Evaluators <= 0 {
		o.Evaluators = runtime.GOMAXPROCS(0)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	b := &Batcher{next: next, opts: o, queues: map[forest.OutputKind]chan *call{}, stop: make(chan struct{})}
	for _, k := range kinds {
		q := make(chan *call, 4*o.MaxBatchRows)
		b.queues[k] = q
		for range o.Evaluators {
			b.wg.Add(1)
			go b.loop(k, q)
		}
	}
	return b
}

// Close stops the batcher's goroutines once the calls already queued are answered. Calls
// after Close are evaluated directly. The registry closes a model's batcher when the model is
// replaced or unloaded and its last in-flight request is done.
func (b *Batcher) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stop)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// PredictContext queues the rows and waits for the merged evaluation, or for ctx. A call that
// alone reaches the batch size, or has no rows, is evaluated directly.
func (b *Batcher) PredictContext(ctx context.Context, dst, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error) {
	q, ok := b.queues[kind]
	if !ok || nrows <= 0 || nrows >= b.opts.MaxBatchRows {
		return b.next.PredictContext(ctx, dst, rows, nrows, kind)
	}
	c := &call{rows: rows, nrows: nrows, dst: dst, done: make(chan result, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return b.next.PredictContext(ctx, dst, rows, nrows, kind)
	}
	// While this read lock is held the loops run (Close waits for it), so a full queue drains.
	select {
	case q <- c:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return dst, ctx.Err()
	}
	select {
	case r := <-c.done:
		return r.vals, r.err
	case <-ctx.Done():
		// The merged evaluation goes on for the other calls; its answer to this one is dropped.
		return dst, ctx.Err()
	}
}

func (b *Batcher) loop(kind forest.OutputKind, q chan *call) {
	defer b.wg.Done()
	var batch []*call
	var merged []float32
	for {
		var first *call
		select {
		case first = <-q:
		case <-b.stop:
			// Answer what was queued before Close, then end.
			for {
				select {
				case c := <-q:
					b.run(kind, []*call{c}, &merged)
				default:
					return
				}
			}
		}
		batch = b.gather(q, append(batch[:0], first), first.nrows)
		b.run(kind, batch, &merged)
	}
}

// gather adds to batch (its first call, of n rows) the calls that are queued or on their way,
// and never waits for one that is not: it takes what the queue holds, and when the queue is
// empty yields its core once, so that handlers already decoding a request get to queue it,
// and stops once a yield brings nothing, the batch holds MaxBatchRows rows, or MaxDelay has
// passed since it began. So a batch is as large as the load makes it: a request that comes
// alone is evaluated at once, not held for others (a fixed wait for 64 rows, with a model of
// 2000 trees on one core, left one client a tenth of the answers it got without batching and
// 32 clients 0.82x: runtime/README.md), and the requests that arrive while one batch is
// evaluated form the next.
func (b *Batcher) gather(q chan *call, batch []*call, n int) []*call {
	start := time.Now()
	yielded := false
	for n < b.opts.MaxBatchRows {
		select {
		case c := <-q:
			batch = append(batch, c)
			n += c.nrows
			yielded = false
			continue
		default:
		}
		if yielded || time.Since(start) >= b.opts.MaxDelay {
			break
		}
		runtime.Gosched()
		yielded = true
	}
	return batch
}

// run evaluates one batch and answers each of its calls. It runs request work outside any
// handler, so it recovers a panic as a handler does: every call of the batch gets the error
// and the loop goes on serving.
func (b *Batcher) run(kind forest.OutputKind, batch []*call, merged *[]float32) {
	answered := 0
	defer func() {
		if r := recover(); r != nil {
			b.opts.Log.Error("panic in batch evaluation", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err := fmt.Errorf("internal error in batch evaluation: %v", r)
			for _, c := range batch[answered:] {
				c.done <- result{c.dst, err}
			}
		}
	}()
	// The merged evaluation serves several requests, so no single request's context ends it;
	// each caller stops waiting on its own context instead.
	ctx := context.Background()
	if len(batch) == 1 {
		c := batch[0]
		vals, err := b.next.PredictContext(ctx, c.dst, c.rows, c.nrows, kind)
		c.done <- result{vals, err}
		answered = 1
		return
	}
	n := 0
	*merged = (*merged)[:0]
	for _, c := range batch {
		*merged = append(*merged, c.rows...)
		n += c.nrows
	}
	out, err := b.next.PredictContext(ctx, nil, *merged, n, kind)
	if err == nil && len(out)%n != 0 {
		err = fmt.Errorf("batch of %d rows gave %d values", n, len(out))
	}
	if err != nil {
		for _, c := range batch {
			c.done <- result{c.dst, err}
		}
		answered = len(batch)
		return
	}
	width := len(out) / n
	off := 0
	for _, c := range batch {
		k := c.nrows * width
		c.done <- result{append(c.dst, out[off:off+k]...), nil}
		off += k
		answered++
	}
}
