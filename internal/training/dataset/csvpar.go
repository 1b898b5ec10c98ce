package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Parsing a rank's CSV rows on all cores: the calling goroutine reads the input in blocks of whole
// lines and counts their line breaks, which places each block's rows in the matrix before they
// are parsed (a line is at most one row); GOMAXPROCS workers parse the blocks straight into their
// rows. A rank reads its input once and holds no copy of its rows: a few blocks are in flight.
//
// The result, an error included, is the sequential read's. A worker's error (a bad cell, a
// ragged row, a quoting error on one line) names the same file, line and column, since each
// block knows its first line; the first block in file order with an error gives it. What a
// block cannot decide on its own sends the whole read back to the sequential parser, which reads
// the input again: a quoted field that spans lines (a block ends at a line end, maybe inside
// it), a matrix bound reached, or text labels mixed with numbers or beyond maxClasses (whose
// class list or message depends on all rows in file order). Training data has none of these.

// csvBlockBytes is the size of a block; a longer line gets a larger one. Small, so that the
// blocks in flight add little to a rank's memory next to its matrix; large enough that handing
// a block over costs nothing against parsing it.
var csvBlockBytes = 256 << 10

// csvParallelMinBytes is the input size from which a CSV is parsed in parallel.
var csvParallelMinBytes int64 = 4 << 20

// errSequential asks loadCSVOpen to read the input again, sequentially.
var errSequential = errors.New("read the CSV sequentially")

// csvWorkers is how many workers parse a CSV input of size bytes (0 or 1: sequentially).
func csvWorkers(size int64, s Shard) int {
	if size < csvParallelMinBytes || s.World > 1 {
		return 0 // rows i % World need every row's index: only a sequential read knows it
	}
	return runtime.GOMAXPROCS(0)
}

// loadCSVOpen reads the uncompressed CSV that open returns (rc, when not nil, is its first
// opening), in parallel when it is large enough and shard s keeps all of it; when the parallel
// read cannot give the sequential result it reads the input again, sequentially.
func loadCSVOpen(rc io.ReadCloser, open func() (io.ReadCloser, error), file string, o csvOptions, s Shard) (*Matrix, error) {
	o.workers = csvWorkers(o.sizeHint, s)
	if rc == nil {
		var err error
		if rc, err = open(); err != nil {
			return nil, err
		}
	}
	m, err := loadCSVReader(rc, file, o, s)
	rc.Close()
	if !errors.Is(err, errSequential) {
		return m, err
	}
	// Give the parallel read's matrix back before the sequential one makes its own.
	runtime.GC()
	debug.FreeOSMemory()
	o.workers = 0
	if rc, err = open(); err != nil {
		return nil, err
	}
	defer rc.Close()
	return loadCSVReader(rc, file, o, s)
}

// csvBlock is a run of whole lines of the input, parsed by one worker.
type csvBlock struct {
	index int    // its place in the input
	buf   []byte // the pooled buffer data is in
	data  []byte
	after int // lines before the block
	row   int // the row of its first line
	lines int // lines in data: the rows it may hold

	// Set by the worker.
	rows   int // rows parsed
	worker int
	err    error
	redo   bool // the block needs the sequential read
}

// csvRows is the parallel read's matrix, grown (rarely: the size estimate is generous) while no
// worker writes to it.
type csvRows struct {
	mu     sync.RWMutex
	cap    int       // rows allocated
	data   []float32 // cap x cols
	labels []float32 // a row's label: its value, its class index, or its worker's class id's bits
}

func (r *csvRows) grow(rows, cols int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data := make([]float32, rows*cols)
	copy(data, r.data)
	labels := make([]float32, rows)
	copy(labels, r.labels)
	r.cap, r.data, r.labels = rows, data, labels
}

// loadParallel parses the data lines of body, which come after line `after`, into m.
func (c *csvColumns) loadParallel(body io.Reader, after int, m *Matrix, o csvOptions) (*Matrix, error) {
	cols, maxLine := m.Cols, o.limits.maxLine()
	maxRows := math.MaxInt / max(cols, 1)
	if o.limits.MaxMatrixBytes > 0 {
		maxRows = int(o.limits.MaxMatrixBytes / 4 / int64(cols))
	}
	var out csvRows
	workers := o.workers
	free := make(chan []byte, workers+2)
	for range workers + 2 {
		free <- make([]byte, csvBlockBytes)
	}
	work := make(chan *csvBlock, workers)
	// failed is the index of the first block known to have failed: later blocks need no parse.
	var failed atomic.Int64
	failed.Store(math.MaxInt64)
	labels := make([]*workerLabels, workers)
	var wg sync.WaitGroup
	for w := range workers {
		labels[w] = newWorkerLabels(o.classes)
		wg.Go(func() {
			cr := &recordReader{maxLine: maxLine}
			for b := range work {
				if int64(b.index) < failed.Load() {
					c.parseBlock(cr, b, &out, labels[w], o.slowOnly)
					b.worker = w
					if b.err != nil || b.redo {
						lowerTo(&failed, int64(b.index))
					}
					if o.rows != nil {
						o.rows.Add(int64(b.rows))
					}
				}
				free <- b.buf
				b.buf, b.data = nil, nil
			}
		})
	}

	var blocks []*csvBlock
	var readErr error
	var carry, grown []byte
	row, read := 0, int64(0)
	for int64(len(blocks)) < failed.Load() {
		buf := grown
		if buf == nil {
			buf = <-free
		}
		grown = nil
		if len(buf) < 2*len(carry) {
			buf = make([]byte, 2*len(carry)) // after a long line; it replaces buf in the pool
		}
		n := copy(buf, carry)
		k, err := io.ReadFull(body, buf[n:])
		n += k
		read += int64(k)
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			readErr = fmt.Errorf("read %s: %w", c.file, err)
			break
		}
		data := buf[:n]
		if !eof {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				// A line longer than the buffer: past the bound (with a \r\n) it is an error,
				// else it gets a buffer twice as large.
				if n > maxLine+2 {
					readErr = lineTooLongError(c.file, after+1, maxLine)
					break
				}
				carry = append(carry[:0], data...)
				grown = make([]byte, 2*len(buf)) // in place of buf in the pool
				continue
			}
			carry = append(carry[:0], data[i+1:]...)
			data = data[:i+1]
		}
		breaks := bytes.Count(data, []byte{'\n'})
		lines := breaks
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++ // the last line, without a line break
		}
		if row+lines > out.cap && out.cap < maxRows {
			// Room for the rows the input's size predicts from the rows so far, with a margin.
			est := row + lines
			if eof {
				// All rows are known.
			} else if o.sizeHint > 0 && read > 0 {
				est = max(est, int(float64(row+lines)*float64(o.sizeHint)/float64(read)*1.1)+1024)
			} else {
				est = max(est, 2*out.cap)
			}
			out.grow(min(est, maxRows), cols)
		}
		b := &csvBlock{index: len(blocks), buf: buf, data: data, after: after, row: row, lines: lines}
		blocks = append(blocks, b)
		work <- b
		after += breaks
		row += lines
		if eof {
			break
		}
	}
	close(work)
	wg.Wait()

	rows := 0
	for _, b := range blocks {
		if b.redo {
			return nil, c.again(blocks, o)
		}
		if b.err != nil {
			return nil, b.err
		}
		rows += b.rows
	}
	if readErr != nil {
		return nil, readErr
	}
	if rows == 0 {
		return nil, &DataError{File: c.file, Msg: "the file has a header but no data rows"}
	}
	var err error
	m.Classes, m.LabelMin, m.LabelMax, err = mergeLabels(labels, blocks, out.labels)
	if errors.Is(err, errSequential) {
		return nil, c.again(blocks, o)
	}
	// A block holds fewer rows than lines when it has empty lines: close the gaps.
	to := 0
	for _, b := range blocks {
		if b.row != to {
			copy(out.data[to*cols:], out.data[b.row*cols:(b.row+b.rows)*cols])
			copy(out.labels[to:], out.labels[b.row:b.row+b.rows])
		}
		to += b.rows
	}
	m.Rows, m.TotalRows = rows, rows
	m.Data, m.Labels = out.data[:rows*cols:rows*cols], out.labels[:rows:rows]
	return m, nil
}

// again takes back the rows the blocks counted in the progress and asks for the sequential read.
func (c *csvColumns) again(blocks []*csvBlock, o csvOptions) error {
	if o.rows != nil {
		for _, b := range blocks {
			o.rows.Add(-int64(b.rows))
		}
	}
	return errSequential
}

// lowerTo sets v to x if x is less.
func lowerTo(v *atomic.Int64, x int64) {
	for old := v.Load(); x < old && !v.CompareAndSwap(old, x); old = v.Load() {
	}
}

// parseBlock parses b's lines into their rows.
func (c *csvColumns) parseBlock(cr *recordReader, b *csvBlock, out *csvRows, labels *workerLabels, slowOnly bool) {
	out.mu.RLock()
	defer out.mu.RUnlock()
	cols := len(c.featCols)
	cr.reset(b.data, b.after)
	for {
		line, err := cr.nextLine()
		if errors.Is(err, io.EOF) {
			return
		}
		row := b.row + b.rows
		if err == nil && row >= out.cap {
			b.redo = true // the matrix bound: the sequential read says where it is reached
			return
		}
		var label string
		var labelLine int
		if err == nil {
			label, labelLine, err = c.row(cr, line, out.data[row*cols:(row+1)*cols], nil, slowOnly)
		} else {
			err = csvError(c.file, c.header, cr, err)
		}
		if cr.spanned {
			b.redo = true
			return
		}
		if err != nil {
			b.err = err
			return
		}
		v, msg := labels.add(label)
		if msg != "" {
			b.err = c.labelError(labelLine, msg)
			return
		}
		out.labels[row] = v
		b.rows++
	}
}

// workerLabels is a worker's share of the label column (labelSet, in parallel). Until its first
// label that is not a number, a worker keeps labels as numbers; from then on as class ids of
// its own, mapped to the sorted class list once every worker is done.
type workerLabels struct {
	fixed     map[string]int32 // the given class list, if any
	fixedList []string
	text      bool
	numbers   int // rows kept as numbers
	min, max  float64
	ids       map[string]int32
	names     []string // by id
}

func newWorkerLabels(classes []string) *workerLabels {
	l := &workerLabels{min: math.Inf(1), max: math.Inf(-1), ids: map[string]int32{}}
	if classes != nil {
		l.fixed = make(map[string]int32, len(classes))
		for i, c := range classes {
			l.fixed[c] = int32(i)
		}
		l.fixedList = classes
	}
	return l
}

// add returns what a row keeps of its label cell (see csvRows.labels), or why it is no label.
func (l *workerLabels) add(cell string) (float32, string) {
	s := strings.TrimSpace(cell)
	if isMissing(s) {
		return 0, missingLabelMsg(cell)
	}
	if l.fixed != nil {
		id, ok := l.fixed[s]
		if !ok {
			return 0, unknownClassMsg(s, l.fixedList)
		}
		return float32(id), ""
	}
	if !l.text {
		if f, err := parseFloat32(s); err == nil && !math.IsInf(float64(f), 0) {
			l.min, l.max = min(l.min, float64(f)), max(l.max, float64(f))
			l.numbers++
			return f, ""
		}
		l.text = true
	}
	id, ok := l.ids[s]
	if !ok {
		if len(l.names) == maxClasses {
			id = -1 // too many: mergeLabels sends the read back
		} else {
			s = strings.Clone(s) // s points into the block
			id = int32(len(l.names))
			l.ids[s] = id
			l.names = append(l.names, s)
		}
	}
	return math.Float32frombits(uint32(id)), ""
}

// mergeLabels turns the workers' labels into the sequential read's: numbers, or indices into the
// sorted class list of all workers' classes.
func mergeLabels(ls []*workerLabels, blocks []*csvBlock, labels []float32) (classes []string, lo, hi float32, err error) {
	if ls[0].fixed != nil {
		return slices.Clone(ls[0].fixedList), 0, float32(len(ls[0].fixedList) - 1), nil
	}
	text, numbers := false, 0
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, l := range ls {
		text = text || l.text
		numbers += l.numbers
		mn, mx = min(mn, l.min), max(mx, l.max)
	}
	if !text {
		return nil, float32(mn), float32(mx), nil
	}
	var all []string
	for _, l := range ls {
		if len(l.names) == maxClasses {
			return nil, 0, 0, errSequential // maybe more: the message names the first text label
		}
		all = append(all, l.names...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if numbers > 0 || len(all) > maxClasses {
		// Numbers before text in some worker: their class ids are not known.
		return nil, 0, 0, errSequential
	}
	index := make([][]float32, len(ls))
	for w, l := range ls {
		index[w] = make([]float32, len(l.names))
		for id, name := range l.names {
			k, _ := slices.BinarySearch(all, name)
			index[w][id] = float32(k)
		}
	}
	for _, b := range blocks {
		for i := b.row; i < b.row+b.rows; i++ {
			labels[i] = index[b.worker][math.Float32bits(labels[i])]
		}
	}
	return all, 0, float32(len(all) - 1), nil
}
