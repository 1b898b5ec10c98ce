// Package batcher merges concurrent small inference calls into one evaluation, so many
// single-row requests share one pass over the trees. KServe's own batcher works on V1
// "instances" bodies and does not understand V2, so the runtime batches itself.
package batcher

import (
	"time"

	"github.com/gangboost/gangboost/internal/forest"
)

// Options bound a batch: it is evaluated when it holds MaxBatchRows rows or when MaxDelay has
// passed since its first call, whichever comes first.
type Options struct {
	MaxBatchRows int
	MaxDelay     time.Duration
}

// Predictor is what the batcher calls with merged rows.
type Predictor interface {
	Predict(dst []float32, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error)
}

type call struct {
	rows  []float32
	nrows int
	dst   []float32
	done  chan result
}

type result struct {
	vals []float32
	err  error
}

// Batcher merges calls per output kind.
type Batcher struct {
	next   Predictor
	opts   Options
	queues map[forest.OutputKind]chan *call
}

// New starts a batcher in front of next.
func New(next Predictor, o Options) *Batcher {
	if o.MaxDelay <= 0 {
		o.MaxDelay = time.Millisecond
	}
	b := &Batcher{next: next, opts: o, queues: map[forest.OutputKind]chan *call{}}
	for _, k := range []forest.OutputKind{forest.OutputDefault, forest.OutputMargin, forest.OutputProba,
		forest.OutputLabel, forest.OutputLeaf, forest.OutputContribs} {
		q := make(chan *call, 4*o.MaxBatchRows)
		b.queues[k] = q
		go b.loop(k, q)
	}
	return b
}

// Predict queues the rows and waits for the merged evaluation. A call that alone reaches the
// batch size is evaluated directly.
func (b *Batcher) Predict(dst, rows []float32, nrows int, kind forest.OutputKind) ([]float32, error) {
	q, ok := b.queues[kind]
	if !ok || nrows >= b.opts.MaxBatchRows {
		return b.next.Predict(dst, rows, nrows, kind)
	}
	c := &call{rows: rows, nrows: nrows, dst: dst, done: make(chan result, 1)}
	q <- c
	r := <-c.done
	return r.vals, r.err
}

func (b *Batcher) loop(kind forest.OutputKind, q chan *call) {
	var batch []*call
	var merged []float32
	for first := range q {
		batch = append(batch[:0], first)
		n := first.nrows
		timer := time.NewTimer(b.opts.MaxDelay)
	collect:
		for n < b.opts.MaxBatchRows {
			select {
			case c := <-q:
				batch = append(batch, c)
				n += c.nrows
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		if len(batch) == 1 {
			vals, err := b.next.Predict(first.dst, first.rows, first.nrows, kind)
			first.done <- result{vals, err}
			continue
		}
		merged = merged[:0]
		for _, c := range batch {
			merged = append(merged, c.rows...)
		}
		out, err := b.next.Predict(nil, merged, n, kind)
		if err != nil {
			for _, c := range batch {
				c.done <- result{nil, err}
			}
			continue
		}
		width := len(out) / n
		off := 0
		for _, c := range batch {
			k := c.nrows * width
			c.done <- result{append(c.dst, out[off:off+k]...), nil}
			off += k
		}
	}
}
