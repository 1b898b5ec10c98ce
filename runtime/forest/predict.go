package forest

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// blockRows is how many rows walk one tree before the next tree is taken, as in
// XGBoost's blocked CPU predictor: the tree's nodes stay in L1 cache for the whole
// block, and the block's margins stay in cache across trees.
const blockRows = 64

// scratchBudget bounds, in 4-byte values, the per-call buffers whose size grows with
// the rows of a block: a block holds fewer rows when rows are wide, down to one, so a
// call's scratch stays within max(scratchBudget, one row's worth) whatever the model
// declares (within the bounds build enforces).
const scratchBudget = 1 << 16

// blockRowsFor is how many rows a block holds when each needs perRow scratch values.
func blockRowsFor(perRow int) int {
	return max(1, min(blockRows, scratchBudget/max(perRow, 1)))
}

// scratch holds per-call buffers; pooled so Predict allocates nothing in steady state.
type scratch struct {
	margins []float32
	keys    []uint32
	shap    shapScratch
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Predict evaluates nrows row-major rows of NumFeatures() float32 values (NaN marks a
// missing value) and appends nrows*Width(kind) values to dst, returning the extended
// slice. It is safe for concurrent use and allocates nothing when dst has capacity,
// except for batches large enough to be split across cores (a few small objects per
// call).
func (m *Model) Predict(dst []float32, rows []float32, nrows int, kind OutputKind) ([]float32, error) {
	return m.PredictContext(context.Background(), dst, rows, nrows, kind)
}

// chunkRows is how many rows are evaluated between two looks at the context: about a
// millisecond of work (see contribsChunk for contributions, whose cost per row depends
// on the trees' shapes).
func (m *Model) chunkRows(kind OutputKind) int {
	if kind == OutputContribs {
		return m.shapChunk
	}
	return 1024
}

// minRowsPerWorker is how many rows make it worth handing work to another core:
// starting a goroutine and waking a core cost a few microseconds, the time of some 64
// rows of margins; a core gets at least twice that. Contributions cost far more per
// row: an eighth of a millisecond's worth.
func (m *Model) minRowsPerWorker(kind OutputKind) int {
	if kind == OutputContribs {
		return max(1, m.shapChunk/8)
	}
	return 128
}

// Interruptible reports whether PredictContext of nrows rows of kind looks at its context
// again after it has started (between chunks, or on other cores): only such an evaluation can
// be stopped by a deadline, so a caller need not arm one for the others (a timer costs more
// than evaluating a few rows).
func (m *Model) Interruptible(nrows int, kind OutputKind) bool {
	return nrows > m.chunkRows(kind) || nrows >= 2*m.minRowsPerWorker(kind)
}

// PredictContext is Predict that stops between blocks of rows once ctx is done and
// returns ctx's error with dst unchanged: evaluation a client no longer waits for (it
// hung up, its deadline passed) stops costing CPU. Batches large enough to pay for it
// are split across GOMAXPROCS cores; each core looks at ctx between its blocks.
func (m *Model) PredictContext(ctx context.Context, dst []float32, rows []float32, nrows int, kind OutputKind) ([]float32, error) {
	width, err := m.Width(kind)
	if err != nil {
		return dst, err
	}
	if nrows < 0 {
		return dst, fmt.Errorf("predict: nrows %d is negative", nrows)
	}
	if width > 0 && nrows > math.MaxInt/width {
		return dst, fmt.Errorf("predict: %d rows of %d values overflow", nrows, width)
	}
	if want := nrows * m.numFeature; len(rows) != want || (m.numFeature != 0 && want/m.numFeature != nrows) {
		return dst, fmt.Errorf("predict: rows has %d values, want nrows*num_feature = %d*%d = %d", len(rows), nrows, m.numFeature, want)
	}
	start := len(dst)
	dst = slices.Grow(dst, nrows*width)[:start+nrows*width]
	out := dst[start:]
	nf, chunk := m.numFeature, m.chunkRows(kind)
	// runtime.GOMAXPROCS takes the scheduler's lock: ask only when a batch could be
	// split at all.
	if per := m.minRowsPerWorker(kind); nrows >= 2*per {
		if workers := min(runtime.GOMAXPROCS(0), nrows/per); workers > 1 {
			if done, err := m.predictParallel(ctx, out, rows, nrows, width, kind, workers); err != nil {
				return dst[:start], fmt.Errorf("predict: stopped after %d of %d rows: %w", done, nrows, err)
			}
			return dst, nil
		}
	}
	for b := 0; b < nrows; b += chunk {
		if err := ctx.Err(); err != nil {
			return dst[:start], fmt.Errorf("predict: stopped after %d of %d rows: %w", b, nrows, err)
		}
		e := min(b+chunk, nrows)
		m.predictBlock(out[b*width:e*width], rows[b*nf:e*nf], e-b, width, kind)
	}
	return dst, nil
}

// predictParallel evaluates rows on workers cores: the calling goroutine and
// workers-1 others take chunks of rows from a shared counter until none are left, so
// a core slowed by other work takes fewer. Chunks are a quarter of a core's share,
// at most chunkRows, and each worker looks at ctx before each of its chunks. It
// returns how many rows were done and ctx's error if ctx ended first.
func (m *Model) predictParallel(ctx context.Context, out, rows []float32, nrows, width int, kind OutputKind, workers int) (int, error) {
	chunk := min(m.chunkRows(kind), max(1, nrows/(4*workers)))
	if kind != OutputContribs {
		// Whole kernel blocks: a block's rows share the walk of each tree.
		chunk = max(blockRows, chunk/blockRows*blockRows)
	}
	j := jobPool.Get().(*parallelJob)
	*j = parallelJob{m: m, ctx: ctx, out: out, rows: rows, nrows: nrows, width: width, chunk: chunk, kind: kind}
	for w := 1; w < workers; w++ {
		j.wg.Go(j.work)
	}
	j.work()
	j.wg.Wait()
	done, stopped := int(j.done.Load()), j.stopped.Load()
	// Every worker has returned: nothing holds j any more.
	*j = parallelJob{}
	jobPool.Put(j)
	if stopped {
		return done, ctx.Err()
	}
	return nrows, nil
}

// parallelJob is one call's work shared by its workers; pooled, so a split call
// allocates only its goroutines.
type parallelJob struct {
	m                   *Model
	ctx                 context.Context
	out, rows           []float32
	nrows, width, chunk int
	kind                OutputKind
	next, done          atomic.Int64
	stopped             atomic.Bool
	wg                  sync.WaitGroup
}

var jobPool = sync.Pool{New: func() any { return new(parallelJob) }}

// work takes chunks of rows until none are left or the context is done.
func (j *parallelJob) work() {
	nf := j.m.numFeature
	for !j.stopped.Load() {
		b := int(j.next.Add(int64(j.chunk))) - j.chunk
		if b >= j.nrows {
			return
		}
		if j.ctx.Err() != nil {
			j.stopped.Store(true)
			return
		}
		e := min(b+j.chunk, j.nrows)
		j.m.predictBlock(j.out[b*j.width:e*j.width], j.rows[b*nf:e*nf], e-b, j.width, j.kind)
		j.done.Add(int64(e - b))
	}
}

// predictBlock writes nrows*width values of kind into out.
func (m *Model) predictBlock(out, rows []float32, nrows, width int, kind OutputKind) {
	ng := m.numGroup
	switch kind {
	case OutputMargin:
		m.margins(out, rows, nrows)
	case OutputLeaf:
		m.leaves(out, rows, nrows)
	case OutputContribs:
		m.contribs(out, rows, nrows)
	case OutputDefault:
		if m.obj.transform == tArgmax {
			m.viaScratch(out, rows, nrows, width, func(dst, mg []float32) {
				dst[0] = float32(argmax(mg))
			})
			return
		}
		m.margins(out, rows, nrows)
		m.transformInPlace(out, nrows)
		m.sortRowsInPlace(out, nrows)
	case OutputLabel:
		switch m.obj.kind {
		case kindMulti:
			m.viaScratch(out, rows, nrows, width, func(dst, mg []float32) {
				dst[0] = float32(argmax(mg))
			})
		case kindBinary:
			m.margins(out, rows, nrows)
			for i, v := range out {
				// p > 0.5 <=> margin > 0 for the sigmoid up to rounding; use the
				// probability for logistic so labels agree with predict_proba.
				if m.obj.transform == tSigmoid {
					v = sigmoid(v)
					out[i] = b2f(v > 0.5)
				} else {
					out[i] = b2f(v > 0)
				}
			}
		default:
			m.margins(out, rows, nrows)
			m.transformInPlace(out, nrows)
			m.sortRowsInPlace(out, nrows)
		}
	case OutputProba:
		if m.obj.kind == kindMulti {
			m.margins(out, rows, nrows)
			for r := 0; r < nrows; r++ {
				softmaxInPlace(out[r*ng : (r+1)*ng])
			}
			return
		}
		// Binary: [1-p, p] per group, computed back to front in place.
		m.margins(out[:nrows*ng], rows, nrows)
		for i := nrows*ng - 1; i >= 0; i-- {
			v := out[i]
			var p float32
			switch m.obj.transform {
			case tSigmoid, tIdentity: // logitraw margins are logits too
				p = sigmoid(v)
			default:
				p = b2f(v > 0)
			}
			out[2*i] = 1 - p
			out[2*i+1] = p
		}
	}
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// viaScratch computes margins block by block into a pooled buffer and lets emit write
// each row's width values from its margins.
func (m *Model) viaScratch(out, rows []float32, nrows, width int, emit func(dst, margins []float32)) {
	s := scratchPool.Get().(*scratch)
	ng, nf := m.numGroup, m.numFeature
	br := blockRowsFor(ng)
	if cap(s.margins) < br*ng {
		s.margins = make([]float32, br*ng)
	}
	for b := 0; b < nrows; b += br {
		e := min(b+br, nrows)
		mg := s.margins[:(e-b)*ng]
		m.margins(mg, rows[b*nf:e*nf], e-b)
		for r := b; r < e; r++ {
			emit(out[r*width:(r+1)*width], mg[(r-b)*ng:(r-b+1)*ng])
		}
	}
	scratchPool.Put(s)
}

// transformInPlace applies the objective's PredTransform to nrows*numGroup margins.
func (m *Model) transformInPlace(out []float32, nrows int) {
	switch m.obj.transform {
	case tSigmoid:
		for i, v := range out {
			out[i] = sigmoid(v)
		}
	case tExp:
		for i, v := range out {
			out[i] = expf(v)
		}
	case tHinge:
		for i, v := range out {
			out[i] = b2f(v > 0)
		}
	case tSoftprob:
		ng := m.numGroup
		for r := 0; r < nrows; r++ {
			softmaxInPlace(out[r*ng : (r+1)*ng])
		}
	}
}

// sortRowsInPlace sorts each row's numGroup outputs when the model asks for it.
func (m *Model) sortRowsInPlace(out []float32, nrows int) {
	if !m.sortRows {
		return
	}
	ng := m.numGroup
	for r := 0; r < nrows; r++ {
		slices.Sort(out[r*ng : (r+1)*ng])
	}
}

// margins writes nrows*numGroup raw margins: base margin plus, in XGBoost's order,
// each tree's leaf value accumulated in float32.
func (m *Model) margins(out, rows []float32, nrows int) {
	ng := m.numGroup
	for r := 0; r < nrows; r++ {
		copy(out[r*ng:(r+1)*ng], m.baseMargin)
	}
	switch {
	case m.booster == boosterLinear:
		m.linearMargins(out, rows, nrows)
	case m.hasCat:
		m.catMargins(out, rows, nrows)
	case nrows < 4:
		// Too few rows to interleave: walk eight trees at once per row instead.
		nf := m.numFeature
		for r := 0; r < nrows; r++ {
			m.rowMargins(out[r*ng:(r+1)*ng], rows[r*nf:(r+1)*nf])
		}
	case m.wide.trees != nil && nrows >= wideMinRows:
		m.wideMargins(out, rows, nrows)
	default:
		m.blockMargins(out, rows, nrows)
	}
}

// next takes one step down a numerical tree: left if x < split, right if x >= split,
// the default child if x is missing (NaN). Leaves map to themselves.
func next(nodes []node, flags []uint8, row []float32, i uint32) uint32 {
	n := &nodes[i]
	v := row[n.feat]
	r := uint32(0)
	if v >= n.split {
		r = 1
	}
	if v != v {
		r = uint32(flags[i] & flagMissRight)
	}
	return n.left + r
}

// nextCat is next for trees with categorical splits.
func (m *Model) nextCat(row []float32, i uint32) uint32 {
	n := &m.nodes[i]
	v := row[n.feat]
	l := n.left
	if v != v {
		return l + uint32(m.flags[i]&flagMissRight)
	}
	if m.flags[i]&flagCat != 0 {
		if m.catGoesRight(i, v) {
			return l + 1
		}
		return l
	}
	if v >= n.split {
		return l + 1
	}
	return l
}

// walk returns the leaf a row reaches in a tree.
func (m *Model) walk(row []float32, tr *treeMeta) uint32 {
	i := tr.root
	if m.hasCat {
		for d := tr.depth; d > 0; d-- {
			i = m.nextCat(row, i)
		}
		return i
	}
	for d := tr.depth; d > 0; d-- {
		i = next(m.nodes, m.flags, row, i)
	}
	return i
}

func (m *Model) catMargins(out, rows []float32, nrows int) {
	nf, ng := m.numFeature, m.numGroup
	for b := 0; b < nrows; b += blockRows {
		e := min(b+blockRows, nrows)
		for t := range m.trees {
			tr := &m.trees[t]
			for r := b; r < e; r++ {
				i := m.walk(rows[r*nf:(r+1)*nf], tr)
				out[r*ng+int(tr.group)] += m.nodes[i].value
			}
		}
	}
}

// leaves writes the XGBoost node id of the leaf each row reaches in each tree.
func (m *Model) leaves(out, rows []float32, nrows int) {
	nf, nt := m.numFeature, m.NumTrees()
	for r := 0; r < nrows; r++ {
		row := rows[r*nf : (r+1)*nf]
		for t := 0; t < nt; t++ {
			tr := t
			if m.leafTrees != nil {
				tr = int(m.leafTrees[t])
			}
			out[r*nt+t] = float32(m.nodeID[m.walk(row, &m.trees[tr])])
		}
	}
}

// linearMargins follows GBLinear::Pred: bias + base margin, then weight*value for each
// present feature in index order, in float32.
func (m *Model) linearMargins(out, rows []float32, nrows int) {
	nf, ng := m.numFeature, m.numGroup
	w := m.linW
	for r := 0; r < nrows; r++ {
		row := rows[r*nf : (r+1)*nf]
		for g := 0; g < ng; g++ {
			psum := w[nf*ng+g] + out[r*ng+g]
			for f, x := range row {
				if x != x {
					continue
				}
				psum += float32(x * w[f*ng+g])
			}
			out[r*ng+g] = psum
		}
	}
}
