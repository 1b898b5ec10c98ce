package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Sharded reads: a data set of part files (a local folder, an s3:// prefix, or a single object
// or Parquet file, or a local CSV file of at least Spec.SplitFileBytes) is read in shares, so that I/O and parsing per rank shrink with the gang.
// With at least as many parts as ranks each rank reads whole parts, balanced by size (largest
// first to the rank with the fewest bytes, ties to the lower rank: the same plan on every rank).
// With fewer parts, each part is split: Parquet by row group (balanced the same way), CSV by
// byte range (aligned to line starts: a line belongs to the rank whose range holds its first
// byte). A gzip'd CSV part cannot be split; every rank reads it and keeps every world-th row.
//
// A rank then sees only its rows, so the facts over the whole input (row count, label range,
// class names) are its own; Matrix.Partial says so, and the trainer agrees on them across the
// ranks before boosting.

// usesParts reports whether spec is read in shares: an object store path, a folder, or Parquet.
func usesParts(spec Spec) bool {
	if IsObjectURI(spec.Path) || strings.EqualFold(spec.Format, "parquet") {
		return true
	}
	if strings.HasSuffix(strings.ToLower(spec.Path), ".parquet") {
		return true
	}
	return isDir(spec.Path)
}

// partFormat is the format of one part: parquet, csv or libsvm, and whether it is gzip'd.
func partFormat(spec Spec, p part) (string, bool, error) {
	name := strings.ToLower(p.Name)
	gz := strings.HasSuffix(name, ".gz")
	if spec.Format != "" {
		return strings.ToLower(spec.Format), gz, nil
	}
	switch ext := path.Ext(strings.TrimSuffix(name, ".gz")); ext {
	case ".parquet", ".parq":
		return "parquet", false, nil
	case ".csv":
		return "csv", gz, nil
	case ".libsvm", ".svm", ".svmlight":
		return "libsvm", gz, nil
	default:
		return "", false, fmt.Errorf("%s: cannot tell the data format from the extension %q: name the format (csv, parquet or libsvm)", p.Name, ext)
	}
}

// assign gives each of world ranks a share of items with the given sizes: largest first to the
// rank with the fewest bytes so far (ties: the lower rank; equal sizes: the earlier item). It
// returns the items of rank, in their original order.
func assign(sizes []int64, rank, world int) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case sizes[a] > sizes[b]:
			return -1
		case sizes[a] < sizes[b]:
			return 1
		}
		return 0
	})
	load := make([]int64, world)
	var mine []int
	for _, i := range order {
		r := 0
		for k := 1; k < world; k++ {
			if load[k] < load[r] {
				r = k
			}
		}
		// An empty part still counts, so that many empty parts spread over the ranks.
		load[r] += max(sizes[i], 1)
		if r == rank {
			mine = append(mine, i)
		}
	}
	slices.Sort(mine)
	return mine
}

// loadParts reads shard s's share of the data set spec names.
func loadParts(spec Spec, s Shard) (*Matrix, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	var counter byteCounter
	st, err := newStore(spec, s, &counter)
	if err != nil {
		return nil, err
	}
	maxObjects := spec.Limits.MaxObjects
	if maxObjects <= 0 {
		maxObjects = DefaultMaxObjects
	}
	ps, err := st.parts(maxObjects)
	if err != nil {
		return nil, err
	}
	format, _, err := partFormat(spec, ps[0])
	if err != nil {
		return nil, err
	}
	for _, p := range ps[1:] {
		f, _, err := partFormat(spec, p)
		if err != nil {
			return nil, err
		}
		if f != format {
			return nil, fmt.Errorf("%s: the parts mix formats: %s is %s, %s is %s; a data set's parts share one format", spec.Path, ps[0].Name, format, p.Name, f)
		}
	}
	// The load keeps one large matrix live while decoding pages makes garbage; at Go's default
	// GOGC the heap would grow to twice the matrix before a collection. A low target holds the
	// peak near the matrix itself (the benchmark's peak RSS / dense matrix figures).
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var rows atomic.Int64
	prog := startProgress(spec, s, &counter, &rows)
	var m *Matrix
	switch format {
	case "parquet":
		m, err = loadParquetParts(st, ps, spec, s, &rows)
	case "csv":
		m, err = loadCSVParts(st, ps, spec, s, &rows)
	case "libsvm":
		if len(ps) != 1 {
			err = fmt.Errorf("%s: LibSVM data is read from one file (this has %d parts): use CSV or Parquet parts, or one LibSVM file", spec.Path, len(ps))
			break
		}
		var rc io.ReadCloser
		if rc, err = openPart(st, ps[0], 0); err == nil {
			m, err = loadLibSVMReader(rc, ps[0].Name, spec.NumFeatures, spec.Limits, s)
			rc.Close()
		}
	default:
		err = fmt.Errorf("data format %q: want csv, parquet or libsvm", format)
	}
	prog.stop(err == nil)
	if err != nil {
		return nil, err
	}
	m.Partial = s.World > 1
	m.BytesRead = counter.n.Load()
	return m, nil
}

// openPart reads p from off, through gzip when its name ends in .gz (only from 0).
func openPart(st store, p part, off int64) (io.ReadCloser, error) {
	rc, err := st.open(p, off, -1)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(strings.ToLower(p.Name), ".gz") {
		return rc, nil
	}
	z, err := gzip.NewReader(rc)
	if err != nil {
		rc.Close()
		return nil, &DataError{File: p.Name, Msg: "not a gzip file: " + err.Error()}
	}
	return gzipStream{z, rc}, nil
}

type gzipStream struct {
	*gzip.Reader
	rc io.ReadCloser
}

func (g gzipStream) Close() error { g.Reader.Close(); return g.rc.Close() }

func loadParquetParts(st store, ps []part, spec Spec, s Shard, rows *atomic.Int64) (*Matrix, error) {
	if spec.Label == "" {
		return nil, &DataError{File: spec.Path, Msg: "no label column given (Parquet needs the label column's name)"}
	}
	o := csvOptions{label: spec.Label, features: spec.Features, classes: spec.Classes, limits: spec.Limits}
	type unit struct {
		pf *parquetFile
		rg int
	}
	var units []unit
	var first *parquetFile
	open := func(p part) (*parquetFile, error) {
		pf, err := openParquet(st, p, o)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = pf
		} else if err := first.sameSchema(pf); err != nil {
			return nil, err
		}
		return pf, nil
	}
	if len(ps) >= s.World {
		sizes := make([]int64, len(ps))
		for i, p := range ps {
			sizes[i] = p.Size
		}
		for _, i := range assign(sizes, s.Rank, s.World) {
			pf, err := open(ps[i])
			if err != nil {
				return nil, err
			}
			for g := range pf.f.RowGroups() {
				units = append(units, unit{pf, g})
			}
		}
	} else {
		// Fewer parts than ranks: every rank reads every footer (a few KB each) and takes a
		// share of the row groups.
		var all []unit
		var sizes []int64
		for _, p := range ps {
			pf, err := open(p)
			if err != nil {
				return nil, err
			}
			for g := range pf.f.RowGroups() {
				off, end := pf.rowGroupSpan(g)
				all, sizes = append(all, unit{pf, g}), append(sizes, end-off)
			}
		}
		for _, i := range assign(sizes, s.Rank, s.World) {
			units = append(units, all[i])
		}
		if len(units) == 0 {
			return nil, &DataError{File: spec.Path, Msg: fmt.Sprintf("rank %d of %d gets no rows: the data has %d row groups in %d files and a row group is read by one rank; use at most %d ranks, or write more row groups or files",
				s.Rank, s.World, len(all), len(ps), len(all))}
		}
	}
	if first == nil {
		return nil, &DataError{File: spec.Path, Msg: fmt.Sprintf("rank %d of %d gets no files", s.Rank, s.World)}
	}
	total := 0
	for _, u := range units {
		total += int(u.pf.f.RowGroups()[u.rg].NumRows())
	}
	cols := len(first.featCols)
	if !spec.Limits.matrixFits(total, cols) {
		return nil, matrixTooLargeError(spec.Path, s, total, cols, spec.Limits, "")
	}
	m := &Matrix{Rows: total, Cols: cols, Data: make([]float32, total*cols), FeatureNames: slices.Clone(first.names), LabelName: first.labelName}
	labels := newLabelSet(o.classes)
	labels.reserve(total, !first.labelText)
	cats := make([]*categoryColumn, cols)
	for j, text := range first.text {
		if text {
			cats[j] = newCategoryColumn(spec.Categories[first.names[j]])
		}
	}
	row := 0
	var db decodeBuffers
	for k, u := range units {
		n := int(u.pf.f.RowGroups()[u.rg].NumRows())
		if err := u.pf.readRowGroup(u.rg, m.Data[row*cols:(row+n)*cols], cols, labels, cats, spec.Limits, &db); err != nil {
			return nil, err
		}
		row += n
		rows.Add(int64(n))
		if k == len(units)-1 || units[k+1].pf != u.pf {
			u.pf.r.release() // done with this file
		}
	}
	m.TotalRows = total
	if total == 0 {
		return nil, emptyShardError(spec.Path, s, 0)
	}
	if err := labels.finish(m); err != nil {
		err.File, err.ColumnName = spec.Path, first.labelName
		return nil, err
	}
	finishCategories(m, cats)
	return m, nil
}

func loadCSVParts(st store, ps []part, spec Spec, s Shard, rows *atomic.Int64) (*Matrix, error) {
	if spec.Label == "" {
		return nil, &DataError{File: spec.Path, Msg: "no label column given (CSV needs the label column's name)"}
	}
	o := csvOptions{label: spec.Label, features: spec.Features, classes: spec.Classes, limits: spec.Limits, allowEmptyShard: true, rows: rows}
	var ms []*Matrix
	if len(ps) >= s.World {
		sizes := make([]int64, len(ps))
		for i, p := range ps {
			sizes[i] = p.Size
		}
		for _, i := range assign(sizes, s.Rank, s.World) {
			var m *Matrix
			var err error
			if strings.HasSuffix(strings.ToLower(ps[i].Name), ".gz") {
				var rc io.ReadCloser
				if rc, err = openPart(st, ps[i], 0); err != nil {
					return nil, err
				}
				m, err = loadCSVReader(rc, ps[i].Name, o, Shard{0, 1})
				rc.Close()
			} else {
				o := o
				o.sizeHint = ps[i].Size
				m, err = loadCSVOpen(nil, func() (io.ReadCloser, error) { return st.open(ps[i], 0, -1) }, ps[i].Name, o, Shard{0, 1})
			}
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	} else {
		for _, p := range ps {
			m, err := loadCSVSplit(st, p, o, s)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	m, err := concat(ms)
	if err != nil {
		return nil, err
	}
	if m.Rows == 0 {
		return nil, &DataError{File: spec.Path, Msg: fmt.Sprintf("rank %d of %d gets no rows: the data is too small to split between %d ranks; use fewer ranks", s.Rank, s.World, s.World)}
	}
	return m, nil
}

// loadCSVSplit reads shard s's byte range of one CSV part (a gzip'd part: every world-th row).
func loadCSVSplit(st store, p part, o csvOptions, s Shard) (*Matrix, error) {
	if strings.HasSuffix(strings.ToLower(p.Name), ".gz") {
		rc, err := openPart(st, p, 0)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return loadCSVReader(rc, p.Name, o, s)
	}
	if s.World == 1 {
		o.sizeHint = p.Size
		return loadCSVOpen(nil, func() (io.ReadCloser, error) { return st.open(p, 0, -1) }, p.Name, o, s)
	}
	start, end := p.Size*int64(s.Rank)/int64(s.World), p.Size*int64(s.Rank+1)/int64(s.World)
	open := func() (io.ReadCloser, error) {
		rc, _, err := openCSVRange(st, p, start, end, o.limits.maxLine())
		return rc, err
	}
	rc, pos, err := openCSVRange(st, p, start, end, o.limits.maxLine())
	if err != nil {
		return nil, err
	}
	name := p.Name
	if s.Rank > 0 {
		name = fmt.Sprintf("%s (from byte %d; line numbers count from there)", p.Name, pos)
	}
	o.allowEmptyShard = true
	o.sizeHint = end - start
	return loadCSVOpen(rc, open, name, o, Shard{0, 1})
}

// openCSVRange reads the header line of CSV part p, then the lines that start in bytes
// [start, end) of it; pos is where the first of them starts.
func openCSVRange(st store, p part, start, end int64, maxLine int) (rc io.ReadCloser, pos int64, err error) {
	var header []byte
	var body io.ReadCloser
	if start == 0 {
		if body, err = st.open(p, 0, -1); err != nil {
			return nil, 0, err
		}
	} else {
		// The header: the first line of the part.
		rc, err := st.open(p, 0, -1)
		if err != nil {
			return nil, 0, err
		}
		header, err = readLineBounded(bufio.NewReaderSize(rc, 64<<10), maxLine)
		rc.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: read the header: %w", p.Name, err)
		}
		// From the byte before the range: the first line that starts in it follows a newline.
		if body, err = st.open(p, start-1, -1); err != nil {
			return nil, 0, err
		}
	}
	br := bufio.NewReaderSize(body, maxReadBufferBytes)
	pos = start
	if start > 0 {
		skip, err := readLineBounded(br, maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			body.Close()
			return nil, 0, fmt.Errorf("%s: find the first line from byte %d: %w", p.Name, start, err)
		}
		pos = start - 1 + int64(len(skip))
	}
	lr := &lineRange{br: br, pos: pos, end: end, maxLine: maxLine, last: '\n', done: start > 0 && pos >= end}
	if pos < end {
		lr.last = 0
	}
	return readCloser{io.MultiReader(bytes.NewReader(header), lr), body}, pos, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// readLineBounded reads one line (with its newline), failing past max bytes.
func readLineBounded(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if len(line) > max+2 {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// lineRange passes the bytes from pos on until the line that holds byte end-1 has ended.
type lineRange struct {
	br        *bufio.Reader
	pos, end  int64
	maxLine   int
	last      byte
	done      bool
	finishing bool
	pending   []byte
}

func (r *lineRange) Read(b []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	if r.pos >= r.end {
		if len(r.pending) == 0 {
			if r.finishing || r.last == '\n' {
				r.done = true
				return 0, io.EOF
			}
			// Finish the line that started inside the range.
			r.finishing = true
			line, err := readLineBounded(r.br, r.maxLine)
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			if len(line) == 0 {
				r.done = true
				return 0, io.EOF
			}
			r.pending = line
		}
		n := copy(b, r.pending)
		r.pending = r.pending[n:]
		r.pos += int64(n)
		return n, nil
	}
	n, err := r.br.Read(b[:min(int64(len(b)), r.end-r.pos)])
	r.pos += int64(n)
	if n > 0 {
		r.last = b[n-1]
	}
	if errors.Is(err, io.EOF) {
		r.done = true
		if n > 0 {
			err = nil
		}
	}
	return n, err
}

// concat joins matrices read from the parts of one data set (same columns) into one.
func concat(ms []*Matrix) (*Matrix, error) {
	if len(ms) == 1 {
		return ms[0], nil
	}
	first := ms[0]
	rows := 0
	var classes []string
	text, numeric := false, false
	for _, m := range ms {
		if !slices.Equal(m.FeatureNames, first.FeatureNames) || m.LabelName != first.LabelName {
			return nil, fmt.Errorf("the part files differ in their columns: features %s and label %q in one, %s and %q in another; a data set's parts share one header",
				quoteList(first.FeatureNames), first.LabelName, quoteList(m.FeatureNames), m.LabelName)
		}
		rows += m.Rows
		if m.Classes != nil {
			text = true
			classes = append(classes, m.Classes...)
		} else if m.Rows > 0 {
			numeric = true
		}
	}
	if text && numeric {
		return nil, fmt.Errorf("label %q holds class names in some part files and numbers in others", first.LabelName)
	}
	slices.Sort(classes)
	classes = slices.Compact(classes)
	out := first.emptyLike()
	out.Data = make([]float32, 0, rows*first.Cols)
	out.Labels = make([]float32, 0, rows)
	out.Classes = nil
	if text {
		out.Classes = classes
	}
	out.LabelMin, out.LabelMax = first.LabelMin, first.LabelMax
	out.TotalRows = 0
	for _, m := range ms {
		out.Data = append(out.Data, m.Data...)
		if text {
			for _, l := range m.Labels {
				k, _ := slices.BinarySearch(classes, m.Classes[int(l)])
				out.Labels = append(out.Labels, float32(k))
			}
		} else {
			out.Labels = append(out.Labels, m.Labels...)
		}
		if m.Rows > 0 {
			out.LabelMin, out.LabelMax = min(out.LabelMin, m.LabelMin), max(out.LabelMax, m.LabelMax)
		}
		out.TotalRows += m.TotalRows
		m.Data, m.Labels = nil, nil
	}
	out.Rows = rows
	if text {
		out.LabelMin, out.LabelMax = 0, float32(len(classes)-1)
	}
	return out, nil
}

// progress logs the bytes and rows a rank has read, at most once per Spec.ProgressEvery, and a
// last line when reading ends: a line per interval of time, not per chunk.
type progress struct {
	stopc chan bool
	done  chan struct{}
}

// DefaultProgressEvery is the interval between progress lines when Spec.ProgressEvery is 0.
const DefaultProgressEvery = 10 * time.Second

func startProgress(spec Spec, s Shard, c *byteCounter, rows *atomic.Int64) *progress {
	p := &progress{stopc: make(chan bool, 1), done: make(chan struct{})}
	if spec.Log == nil {
		close(p.done)
		return p
	}
	every := spec.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	start := time.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		line := func(msg string) {
			sec := time.Since(start).Seconds()
			b := c.n.Load()
			spec.Log.Info(msg, "data", spec.Path, "rank", s.Rank, "world_size", s.World, "bytes_read", b,
				"rows_read", rows.Load(), "seconds", fmt.Sprintf("%.1f", sec), "mb_per_s", fmt.Sprintf("%.1f", float64(b)/1e6/max(sec, 1e-3)))
		}
		for {
			select {
			case <-t.C:
				line("reading data")
			case ok := <-p.stopc:
				if ok {
					line("data read")
				}
				return
			}
		}
	}()
	return p
}

func (p *progress) stop(ok bool) {
	select {
	case p.stopc <- ok:
	default:
	}
	<-p.done
}
