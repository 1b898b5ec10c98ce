package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// maxClasses bounds the distinct values of a string label column: more than that is not a class
// label, and the bound keeps the value set small while a numeric column is scanned.
const maxClasses = 10000

type csvOptions struct {
	label    string
	features []string
	classes  []string
	// allowEmptyShard returns a matrix with no rows instead of an error.
	allowEmptyShard bool
	limits          Limits
	// rows, when set, counts the rows read, for the progress lines.
	rows *atomic.Int64
	// workers > 1 parses the rows in parallel (loadParallel) when the shard keeps every row;
	// the caller must then be able to read the input again (loadCSVOpen).
	workers int
	// slowOnly parses every row field by field, as before fastRow (tests compare the two).
	slowOnly bool
	// sizeHint, when > 0, is the input's size in bytes: the matrix is then allocated once at the
	// size the first rows' length predicts, instead of in chunks copied together at the end
	// (which holds the matrix twice).
	sizeHint int64
}

// LoadCSV reads a CSV file with a header row, takes the label from column label and the features
// from the named columns (nil: every column but the label), validates every row of the file and
// keeps shard s's rows. Empty cells and NA, N/A, NaN, null (any case) are missing values (NaN);
// a missing label is an error. A label column holding strings becomes class indices (see
// Matrix.Classes). A name ending in .gz is read through gzip.
func LoadCSV(path, label string, features []string, s Shard) (*Matrix, error) {
	return loadCSVFile(path, csvOptions{label: label, features: features}, s)
}

func loadCSVFile(path string, o csvOptions, s Shard) (*Matrix, error) {
	f, err := openData(path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	defer f.Close()
	return loadCSVReader(f, path, o, s)
}

func loadCSVReader(r io.Reader, file string, o csvOptions, s Shard) (*Matrix, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	parallel := o.workers > 1 && s.World == 1
	var cr *recordReader
	if parallel {
		// Only the header goes through this reader's buffer: the blocks are read straight
		// into their own.
		cr = &recordReader{br: bufio.NewReaderSize(r, 64<<10)}
	} else {
		cr = newRecordReader(r)
	}
	cr.maxLine = o.limits.maxLine()
	c, err := readCSVHeader(cr, file, o)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Cols: len(c.featCols), LabelName: c.header[c.labelCol], FeatureNames: make([]string, len(c.featCols))}
	for k, col := range c.featCols {
		m.FeatureNames[k] = c.header[col]
	}
	if parallel {
		// What the header's reader buffered beyond the header, then the rest.
		body := io.MultiReader(io.LimitReader(cr.br, int64(cr.br.Buffered())), r)
		return c.loadParallel(body, cr.line, m, o)
	}
	labels := newLabelSet(o.classes)
	var data chunked[float32]
	scratch := make([]float32, m.Cols) // a row this rank validates but does not keep
	row := 0
	sampled := 0 // bytes of the first rows, for sizeHint
	for ; ; row++ {
		line, err := cr.nextLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(file, c.header, cr, err)
		}
		if o.sizeHint > 0 && row < sampleRows {
			sampled += len(line)
			if row == sampleRows-1 {
				est := estimateOwnRows(o.sizeHint, sampled, sampleRows, s)
				data.reserve(est * m.Cols)
				labels.reserve(est, false)
			}
		}
		own := s.owns(row)
		dst := scratch
		var noRoom *DataError
		if own {
			if o.limits.matrixFits(m.Rows+1, m.Cols) {
				dst = data.extend(m.Cols)
			} else {
				noRoom = matrixTooLargeError(file, s, m.Rows+1, m.Cols, o.limits, fmt.Sprintf(" (reached at line %d)", cr.line))
			}
		}
		label, labelLine, err := c.row(cr, line, dst, noRoom, o.slowOnly)
		if err != nil {
			return nil, err
		}
		if msg := labels.add(label, own); msg != "" {
			return nil, c.labelError(labelLine, msg)
		}
		if own {
			m.Rows++
		}
		if o.rows != nil && row&4095 == 4095 {
			o.rows.Add(4096)
		}
	}
	if o.rows != nil {
		o.rows.Add(int64(row & 4095))
	}
	if row == 0 {
		return nil, &DataError{File: file, Msg: "the file has a header but no data rows"}
	}
	m.TotalRows = row
	if m.Rows == 0 && !o.allowEmptyShard {
		return nil, emptyShardError(file, s, row)
	}
	m.Data = data.flatten()
	if err := labels.finish(m); err != nil {
		err.File = file
		err.Column, err.ColumnName = c.labelCol+1, c.header[c.labelCol]
		return nil, err
	}
	return m, nil
}

// csvColumns is what a CSV file's header says: the columns' names and which of them are read.
type csvColumns struct {
	file     string
	header   []string
	featCols []int // the file column of each feature, in the matrix's order
	labelCol int
	// role is, per file column, its feature index, roleLabel or roleSkip: fastRow takes the
	// fields in file order.
	role []int
}

const (
	roleLabel = -1
	roleSkip  = -2
)

// readCSVHeader reads the header row and finds the label and feature columns.
func readCSVHeader(cr *recordReader, file string, o csvOptions) (*csvColumns, error) {
	rec, err := cr.read()
	if errors.Is(err, io.EOF) {
		return nil, &DataError{File: file, Msg: "the file is empty: want a header row naming the columns, then data rows"}
	}
	if err != nil {
		return nil, csvError(file, nil, cr, err)
	}
	header := make([]string, len(rec))
	cols := make(map[string]int, len(header))
	for j, f := range rec {
		h := strings.TrimSpace(string(f))
		if j == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // spreadsheet exports start with a BOM
		}
		header[j] = h
		if h == "" {
			return nil, &DataError{File: file, Line: 1, Column: j + 1, Msg: "the header gives this column no name"}
		}
		if k, dup := cols[h]; dup {
			return nil, &DataError{File: file, Line: 1, Column: j + 1, ColumnName: h,
				Msg: fmt.Sprintf("the header names two columns %q (columns %d and %d)", h, k+1, j+1)}
		}
		cols[h] = j
	}
	labelCol, ok := cols[o.label]
	if !ok {
		return nil, &DataError{File: file, Line: 1, Msg: fmt.Sprintf("no label column %q%s; the columns are %s",
			o.label, didYouMean(o.label, header), quoteList(header))}
	}
	featCols, err := featureColumns(file, header, cols, labelCol, o.features)
	if err != nil {
		return nil, err
	}
	role := make([]int, len(header))
	for j := range role {
		role[j] = roleSkip
	}
	role[labelCol] = roleLabel
	for k, j := range featCols {
		role[j] = k
	}
	return &csvColumns{file: file, header: header, featCols: featCols, labelCol: labelCol, role: role}, nil
}

// row parses the record whose first line cr.nextLine returned into dst (a value per feature) and
// returns its label cell (valid until the next read) and the line the cell is on. noRoom, when
// set, is the error of a row the matrix may not hold, returned once the record is known to be
// well-formed: the same error, for the same input, as before the fast path existed. slowOnly
// skips fastRow (tests compare the two).
func (c *csvColumns) row(cr *recordReader, line []byte, dst []float32, noRoom *DataError, slowOnly bool) (label string, labelLine int, err error) {
	if noRoom == nil && !slowOnly {
		if label, ok := c.fastRow(line, dst); ok {
			return bytesString(label), cr.line, nil
		}
	}
	rec, err := cr.record(line)
	if err != nil {
		return "", 0, csvError(c.file, c.header, cr, err)
	}
	if len(rec) != len(c.header) {
		return "", 0, &DataError{File: c.file, Line: cr.fieldLine(0),
			Msg: fmt.Sprintf("expected %d fields as in the header, got %d", len(c.header), len(rec))}
	}
	if noRoom != nil {
		return "", 0, noRoom
	}
	for k, col := range c.featCols {
		v, bad := parseCell(bytesString(rec[col]))
		if bad != "" {
			return "", 0, &DataError{File: c.file, Line: cr.fieldLine(col), Column: col + 1, ColumnName: c.header[col], Msg: quoteClip(bytesString(rec[col])) + " " + bad}
		}
		dst[k] = v
	}
	return bytesString(rec[c.labelCol]), cr.fieldLine(c.labelCol), nil
}

// fastRow parses a line of plain numbers (and an unquoted label) into dst in one pass, without
// splitting it into fields first; ok is false for anything else (quotes, spaces, NA, a wrong
// field count, a bad cell), which row then parses field by field and reports as before.
func (c *csvColumns) fastRow(line []byte, dst []float32) (label []byte, ok bool) {
	p := 0
	last := len(c.role) - 1
	for j, role := range c.role {
		if role >= 0 {
			v, end, ok := parseNumberField(line, p)
			if !ok {
				return nil, false
			}
			dst[role] = v
			p = end
		} else {
			end := p
			for end < len(line) && line[end] != ',' && line[end] != '\n' {
				if line[end] == '"' {
					return nil, false
				}
				end++
			}
			if role == roleLabel {
				label = line[p:end]
			}
			p = end
		}
		if j < last {
			if p == len(line) || line[p] != ',' {
				return nil, false
			}
			p++
		}
	}
	// The record ends here: a newline (readLine turned \r\n into \n) or the end of the text.
	return label, p == len(line) || (p == len(line)-1 && line[p] == '\n')
}

func (c *csvColumns) labelError(line int, msg string) *DataError {
	return &DataError{File: c.file, Line: line, Column: c.labelCol + 1, ColumnName: c.header[c.labelCol], Msg: msg}
}

func featureColumns(file string, header []string, cols map[string]int, labelCol int, names []string) ([]int, error) {
	var featCols []int
	if names == nil {
		for j := range header {
			if j != labelCol {
				featCols = append(featCols, j)
			}
		}
	} else {
		seen := make(map[string]bool, len(names))
		for _, name := range names {
			c, ok := cols[name]
			switch {
			case !ok:
				return nil, &DataError{File: file, Line: 1, Msg: fmt.Sprintf("no feature column %q%s; the columns are %s",
					name, didYouMean(name, header), quoteList(header))}
			case c == labelCol:
				return nil, &DataError{File: file, Line: 1, Msg: fmt.Sprintf("feature column %q is the label column", name)}
			case seen[name]:
				return nil, &DataError{File: file, Line: 1, Msg: fmt.Sprintf("feature column %q is listed twice", name)}
			}
			seen[name] = true
			featCols = append(featCols, c)
		}
	}
	if len(featCols) == 0 {
		return nil, &DataError{File: file, Line: 1, Msg: "no feature columns: the file holds only the label column " + quoteList(header)}
	}
	return featCols, nil
}

// csvError locates a quoting error or an overlong line, naming the column once the header is
// known.
func csvError(file string, header []string, cr *recordReader, err error) error {
	if errors.Is(err, errLineTooLong) {
		return lineTooLongError(file, cr.tooLongAt, cr.limit())
	}
	var se *csvSyntaxError
	if errors.As(err, &se) {
		de := &DataError{File: file, Line: se.line, Column: se.field + 1, Msg: "CSV syntax: " + se.msg}
		if se.field < len(header) {
			de.ColumnName = header[se.field]
		}
		return de
	}
	return fmt.Errorf("read %s: %w", file, err)
}

// isMissing reports whether a trimmed cell stands for a missing value.
func isMissing(s string) bool {
	switch len(s) {
	case 0:
		return true
	case 2, 3, 4:
		return strings.EqualFold(s, "na") || strings.EqualFold(s, "nan") || strings.EqualFold(s, "n/a") || strings.EqualFold(s, "null")
	}
	return false
}

// parseCell parses a feature cell; bad is empty, or says why the cell is not a number.
func parseCell(cell string) (v float32, bad string) {
	s := strings.TrimSpace(cell)
	if isMissing(s) {
		return float32(math.NaN()), ""
	}
	f, err := parseFloat32(s)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, "is out of the float32 range"
		}
		return 0, "is not a number"
	}
	if math.IsInf(float64(f), 0) {
		// XGBoost rejects infinite inputs; say so here, with the line, rather than in the trainer.
		return 0, "is infinite"
	}
	return f, ""
}

// labelSet collects a label column over the whole file. Until a non-numeric label shows up the
// column is numeric; it also remembers the distinct strings (up to maxClasses) so that a
// string column's sorted class list, and thus the class indices, are the same on every rank.
type labelSet struct {
	fixed map[string]int32 // the given class list, if any

	numeric          bool
	firstText        string
	min, max         float64
	ids              map[string]int32
	names            []string // by id (order of first appearance)
	overflow         bool
	ownValues        chunked[float32]
	ownIDs           chunked[int32]
	fixedClassesList []string
}

func newLabelSet(classes []string) *labelSet {
	l := &labelSet{numeric: true, min: math.Inf(1), max: math.Inf(-1), ids: map[string]int32{}}
	if classes != nil {
		l.fixed = make(map[string]int32, len(classes))
		for i, c := range classes {
			l.fixed[c] = int32(i)
		}
		l.fixedClassesList = slices.Clone(classes)
	}
	return l
}

// add takes one row's label cell; it returns a message when the cell is no valid label.
func (l *labelSet) add(cell string, own bool) string {
	s := strings.TrimSpace(cell)
	if isMissing(s) {
		return missingLabelMsg(cell)
	}
	if l.fixed != nil {
		id, ok := l.fixed[s]
		if !ok {
			return unknownClassMsg(s, l.fixedClassesList)
		}
		if own {
			l.ownIDs.append(id)
		}
		return ""
	}
	v := math.NaN()
	// Once a label is text the column holds classes and numeric values no longer matter (and a
	// failing ParseFloat allocates its error).
	if l.numeric {
		if f32, err := parseFloat32(s); err == nil && !math.IsInf(float64(f32), 0) {
			f := float64(f32)
			v = f
			l.min, l.max = min(l.min, f), max(l.max, f)
		} else {
			l.numeric, l.firstText = false, strings.Clone(s)
		}
	}
	id := int32(-1)
	if !l.overflow {
		var ok bool
		if id, ok = l.ids[s]; !ok {
			if len(l.names) == maxClasses {
				l.overflow, id = true, -1
			} else {
				// A clone: s points into the whole CSV record, which must not stay alive.
				s = strings.Clone(s)
				id = int32(len(l.names))
				l.ids[s] = id
				l.names = append(l.names, s)
			}
		}
	}
	if own {
		l.ownValues.append(float32(v))
		l.ownIDs.append(id)
	}
	return ""
}

func missingLabelMsg(cell string) string {
	return fmt.Sprintf("the label is missing (%q); every row needs a label", cell)
}

func unknownClassMsg(label string, classes []string) string {
	return fmt.Sprintf("label %s is not one of the training data's classes %s", quoteClip(label), quoteList(classes))
}

// addNumber takes a numeric label of this rank (from a typed column, no text to parse); it
// returns a message when it is no valid label. Against a given class list (evaluation data of a
// model trained on class names) the number is a class name as CSV would spell it: 1, not 1.0.
func (l *labelSet) addNumber(f float32) string {
	if l.fixed != nil {
		return l.add(strconv.FormatFloat(float64(f), 'g', -1, 32), true)
	}
	v := float64(f)
	l.min, l.max = min(l.min, v), max(l.max, v)
	l.ownValues.append(f)
	return ""
}

// reserve makes room for n labels of this rank in one piece, so that finish hands them over
// without copying chunks together (the labels twice at once). numbers says they come through
// addNumber, which keeps no class ids unless a class list is given.
func (l *labelSet) reserve(n int, numbers bool) {
	if l.fixed != nil {
		l.ownIDs.reserve(n)
		return
	}
	l.ownValues.reserve(n)
	if !numbers {
		l.ownIDs.reserve(n)
	}
}

// finish sets m's Labels, Classes and label range.
func (l *labelSet) finish(m *Matrix) *DataError {
	switch {
	case l.fixed != nil:
		m.Labels = l.idLabels(func(id int32) float32 { return float32(id) })
		m.Classes = l.fixedClassesList
		m.LabelMin, m.LabelMax = 0, float32(len(m.Classes)-1)
	case l.numeric:
		m.Labels = l.ownValues.flatten()
		m.LabelMin, m.LabelMax = float32(l.min), float32(l.max)
	case l.overflow:
		return &DataError{Msg: fmt.Sprintf("the label column holds text (e.g. %q) with more than %d distinct values: want numbers, or class names",
			l.firstText, maxClasses)}
	default:
		sorted := slices.Clone(l.names)
		slices.Sort(sorted)
		index := make([]float32, len(l.names))
		for id, name := range l.names {
			k, _ := slices.BinarySearch(sorted, name)
			index[id] = float32(k)
		}
		m.Labels = l.idLabels(func(id int32) float32 { return index[id] })
		m.Classes = sorted
		m.LabelMin, m.LabelMax = 0, float32(len(sorted)-1)
	}
	return nil
}

// idLabels maps the class ids of this rank's rows to labels, chunk by chunk (no flattened copy
// of the ids).
func (l *labelSet) idLabels(label func(int32) float32) []float32 {
	out := make([]float32, 0, l.ownIDs.n)
	for _, ch := range l.ownIDs.full {
		for _, id := range ch {
			out = append(out, label(id))
		}
	}
	for _, id := range l.ownIDs.cur {
		out = append(out, label(id))
	}
	return out
}

// quoteClip quotes a cell for a message, cut short when long: a message echoing a 16 MiB cell
// would be a 16 MiB log line.
func quoteClip(s string) string {
	const keep = 64
	if len(s) <= keep {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:keep], len(s))
}

func quoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 20 {
			fmt.Fprintf(&b, "... (%d in all)", len(names))
			break
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// didYouMean suggests a column that differs from name only in case, spaces or separators.
func didYouMean(name string, header []string) string {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case ' ', '_', '-', '.':
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	for _, h := range header {
		if norm(h) == norm(name) {
			return fmt.Sprintf(" (did you mean %q?)", h)
		}
	}
	return ""
}

// chunked collects values in chunks and copies them once at the end: growing one slice by
// append copies a 100 MB matrix several times over and dominated load time. The chunks double
// from minChunk values to maxChunk, so that a small file's load does not clear a full chunk.
type chunked[T any] struct {
	full [][]T
	cur  []T
	n    int
}

const (
	minChunk = 1 << 10
	maxChunk = 1 << 16
)

// next starts a new chunk with room for at least n values.
func (c *chunked[T]) next(n int) {
	size := minChunk
	if c.cur != nil {
		c.full = append(c.full, c.cur)
		size = min(2*cap(c.cur), maxChunk)
	}
	c.cur = make([]T, 0, max(size, n))
}

func (c *chunked[T]) append(v T) {
	if len(c.cur) == cap(c.cur) {
		c.next(1)
	}
	c.cur = append(c.cur, v)
	c.n++
}

// extend appends n values and returns them to be written; they stay in one chunk.
func (c *chunked[T]) extend(n int) []T {
	if cap(c.cur)-len(c.cur) < n {
		c.next(n)
	}
	k := len(c.cur)
	c.cur = c.cur[:k+n]
	c.n += n
	return c.cur[k : k+n]
}

// reserve makes room for n values in one piece, the values so far moved into it: flatten then
// returns it without a copy when the estimate held. It is meant for early on (a sample of the
// rows read), when the values to move are few. Memory reserved but never written costs no RSS.
func (c *chunked[T]) reserve(n int) {
	if n <= c.n || (len(c.full) == 0 && n <= cap(c.cur)) {
		return
	}
	cur := make([]T, 0, n)
	for _, ch := range c.full {
		cur = append(cur, ch...)
	}
	c.cur, c.full = append(cur, c.cur...), nil
}

func (c *chunked[T]) flatten() []T {
	if len(c.full) == 0 {
		return c.cur
	}
	out := make([]T, 0, c.n)
	for _, ch := range c.full {
		out = append(out, ch...)
	}
	return append(out, c.cur...)
}

// sampleRows is how many rows estimateOwnRows averages over.
const sampleRows = 256

// estimateOwnRows predicts the rows shard s keeps of size bytes whose first rows took sampled
// bytes, with a margin: rows longer than the first ones grow the matrix in chunks as before.
func estimateOwnRows(size int64, sampled, rows int, s Shard) int {
	perRow := float64(sampled) / float64(rows)
	est := float64(size)/perRow/float64(s.World)*1.1 + 1024
	return int(min(est, 1<<31))
}
