package dataset

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// DefaultMaxRowGroupBytes bounds the compressed bytes of the columns read from one Parquet row
// group when Limits.MaxRowGroupBytes is 0: a row group is read as one request.
const DefaultMaxRowGroupBytes = 1 << 30

// maxFooterBytes bounds a Parquet footer (the schema and row group index): a damaged length
// field would otherwise make the reader allocate up to 4 GiB before it finds the damage.
const maxFooterBytes = 64 << 20

// parquetFile is one opened Parquet part: its footer read and the chosen columns found.
type parquetFile struct {
	p         part
	r         *partReaderAt
	f         *parquet.File
	featCols  []int // leaf column indexes, in feature order
	labelCol  int
	labelText bool
	labelName string
	names     []string // feature names
	kinds     []parquet.Kind
	text      []bool // per feature: a string column, read as categories
}

func parquetError(p part, format string, args ...any) *DataError {
	return &DataError{File: p.Name, Msg: fmt.Sprintf(format, args...)}
}

// openParquet reads p's footer and finds the label and feature columns.
func openParquet(s store, p part, o csvOptions) (*parquetFile, error) {
	if p.Size < 12 {
		return nil, parquetError(p, "%d bytes is too short for a Parquet file (it starts and ends with PAR1): the file is damaged or not Parquet", p.Size)
	}
	r := &partReaderAt{s: s, p: p}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], p.Size-8); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" {
		return nil, parquetError(p, "the file does not end with the Parquet magic PAR1 (got %q): it is not Parquet, it was cut short, or its footer is damaged; rewrite it", tail[4:])
	}
	footer := int64(binary.LittleEndian.Uint32(tail[:4]))
	if footer+12 > p.Size || footer > maxFooterBytes {
		return nil, parquetError(p, "the Parquet footer claims %d bytes in a file of %d bytes (bound %d): the footer is damaged; rewrite the file", footer, p.Size, maxFooterBytes)
	}
	// The footer is read as one request; the page index and bloom filters are not needed.
	if err := r.prefetch(p.Size-8-footer, footer+8); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(r, p.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(8))
	r.win = nil // parsed: the footer's bytes are not read again
	if err != nil {
		return nil, parquetError(p, "not a readable Parquet file (damaged footer?): %v; rewrite the file", err)
	}
	pf := &parquetFile{p: p, r: r, f: f}
	fields := f.Schema().Fields()
	header := make([]string, len(fields))
	cols := make(map[string]int, len(fields))
	for j, fd := range fields {
		header[j] = fd.Name()
		cols[fd.Name()] = j
	}
	labelField, ok := cols[o.label]
	if !ok {
		return nil, parquetError(p, "no label column %q%s; the columns are %s", o.label, didYouMean(o.label, header), quoteList(header))
	}
	featFields, err := featureColumns(p.Name, header, cols, labelField, o.features)
	if err != nil {
		var de *DataError
		if errors.As(err, &de) {
			de.Line = 0
		}
		return nil, err
	}
	leaf := func(j int, role string) (int, parquet.Kind, error) {
		fd := fields[j]
		if !fd.Leaf() || fd.Repeated() {
			return 0, 0, &DataError{File: p.Name, ColumnName: fd.Name(), Column: j + 1, Msg: fmt.Sprintf(
				"the %s column is nested (a group, list or map): gangboost reads flat columns of numbers; flatten it, or leave it out with --features", role)}
		}
		lc, _ := f.Schema().Lookup(fd.Name())
		return lc.ColumnIndex, fd.Type().Kind(), nil
	}
	var kind parquet.Kind
	pf.labelName = o.label
	if pf.labelCol, kind, err = leaf(labelField, "label"); err != nil {
		return nil, err
	}
	switch kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		pf.labelText = true
	case parquet.Int96:
		return nil, &DataError{File: p.Name, Column: labelField + 1, ColumnName: o.label, Msg: "the label column holds INT96 timestamps: want numbers or class names"}
	}
	for _, j := range featFields {
		c, kind, err := leaf(j, "feature")
		if err != nil {
			return nil, err
		}
		text := false
		switch kind {
		case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double:
		case parquet.ByteArray:
			// A string column (pandas' category dtype is written as one, dictionary-encoded):
			// a categorical feature named by its values.
			text = true
		default:
			return nil, &DataError{File: p.Name, Column: j + 1, ColumnName: header[j], Msg: fmt.Sprintf(
				"the feature column holds %s values: features are numbers, or strings naming categories; encode it as either, or leave it out with --features", kind)}
		}
		pf.text = append(pf.text, text)
		pf.featCols = append(pf.featCols, c)
		pf.names = append(pf.names, header[j])
		pf.kinds = append(pf.kinds, kind)
	}
	return pf, nil
}

// sameSchema checks that b has a's columns with a's types: the part files of one data set are
// one table.
func (a *parquetFile) sameSchema(b *parquetFile) error {
	if !slices.Equal(a.names, b.names) || !slices.Equal(a.kinds, b.kinds) || a.labelText != b.labelText {
		return &DataError{File: b.p.Name, Msg: fmt.Sprintf("the part files differ in their columns: %s has features %s (types %v), %s has %s (types %v)",
			a.p.Name, quoteList(a.names), a.kinds, b.p.Name, quoteList(b.names), b.kinds)}
	}
	return nil
}

// chunkStart is the file offset of column c's chunk in row group g.
func (pf *parquetFile) chunkStart(g, c int) int64 {
	cm := pf.f.Metadata().RowGroups[g].Columns[c].MetaData
	start := cm.DataPageOffset
	if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
		start = cm.DictionaryPageOffset
	}
	return start
}

// rowGroupSpan is the byte range of the chosen columns of row group g, and its compressed size.
func (pf *parquetFile) rowGroupSpan(g int) (off, end int64) {
	md := pf.f.Metadata().RowGroups[g]
	off, end = math.MaxInt64, 0
	for _, c := range append([]int{pf.labelCol}, pf.featCols...) {
		start := pf.chunkStart(g, c)
		off, end = min(off, start), max(end, start+md.Columns[c].MetaData.TotalCompressedSize)
	}
	return off, end
}

// readRowGroup reads row group g into rows [row0, row0+n) of m's data and labels; db holds the
// decoding buffers, reused across the row groups of a load.
// cats holds the category numbering of the text columns (nil for the numeric ones).
func (pf *parquetFile) readRowGroup(g int, data []float32, cols int, labels *labelSet, cats []*categoryColumn, l Limits, db *decodeBuffers) error {
	rg := pf.f.RowGroups()[g]
	n := int(rg.NumRows())
	off, end := pf.rowGroupSpan(g)
	maxRG := l.MaxRowGroupBytes
	if maxRG <= 0 {
		maxRG = DefaultMaxRowGroupBytes
	}
	if end < off || off < 0 || end > pf.p.Size {
		return parquetError(pf.p, "row group %d: its column chunks claim bytes %d-%d of a %d-byte file: the footer is damaged; rewrite the file", g, off, end, pf.p.Size)
	}
	var unpacked int64
	for _, c := range append([]int{pf.labelCol}, pf.featCols...) {
		unpacked += max(pf.f.Metadata().RowGroups[g].Columns[c].MetaData.TotalUncompressedSize, 0)
	}
	if end-off > maxRG || unpacked > 4*maxRG {
		return parquetError(pf.p, "row group %d holds %d rows in %d compressed bytes (%d uncompressed) of the chosen columns, more than the bound of %d compressed (and 4 times that uncompressed): write the file with smaller row groups (e.g. 128 MiB)",
			g, n, end-off, unpacked, maxRG)
	}
	if err := pf.r.stream(off, end-off); err != nil {
		return err
	}
	chunks := rg.ColumnChunks()
	readColumn := func(c int, name string, take func(row int, v parquet.Value) string, num func(row int, f float64) string) error {
		pages := chunks[c].Pages()
		defer pages.Close()
		row := 0
		for {
			page, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d: a damaged page: %v", g, err)}
			}
			vr := page.Values()
			if num != nil && page.NumNulls() == 0 {
				// Typed reads of a page without nulls: no parquet.Value per cell.
				handled, msg, err := readTyped(vr, db, func(f float64) string {
					if row >= n {
						return fmt.Sprintf("the column holds more values than the group's %d rows (a repeated column?)", n)
					}
					bad := num(row, f)
					row++
					return bad
				})
				if handled {
					parquet.Release(page)
					if msg != "" {
						return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d, row %d of the group: %s", g, row-1, msg)}
					}
					if err != nil {
						return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d: a damaged page: %v", g, err)}
					}
					continue
				}
			}
			if db.values == nil {
				db.values = make([]parquet.Value, 4096)
			}
			for {
				k, err := vr.ReadValues(db.values)
				for _, v := range db.values[:k] {
					if row >= n {
						parquet.Release(page)
						return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d: the column holds more values than the group's %d rows (a repeated column?)", g, n)}
					}
					if msg := take(row, v); msg != "" {
						parquet.Release(page)
						return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d, row %d of the group: %s", g, row, msg)}
					}
					row++
				}
				if errors.Is(err, io.EOF) || (err == nil && k == 0) {
					break
				}
				if err != nil {
					parquet.Release(page)
					return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d: a damaged page: %v", g, err)}
				}
			}
			parquet.Release(page)
		}
		if row != n {
			return &DataError{File: pf.p.Name, ColumnName: name, Msg: fmt.Sprintf("row group %d: the column holds %d values for %d rows: the file is damaged", g, row, n)}
		}
		return nil
	}
	readFeature := func(j int) error {
		if cat := cats[j]; cat != nil {
			return readColumn(pf.featCols[j], pf.names[j], func(row int, v parquet.Value) string {
				if v.IsNull() {
					data[row*cols+j] = float32(math.NaN())
					return ""
				}
				f, bad := cat.code(v.ByteArray())
				data[row*cols+j] = f
				return bad
			}, nil)
		}
		return readColumn(pf.featCols[j], pf.names[j], func(row int, v parquet.Value) string {
			f, bad := parquetNumber(v)
			if bad != "" {
				return bad
			}
			data[row*cols+j] = f
			return ""
		}, func(row int, f float64) string {
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) || math.IsNaN(f) {
				if _, bad := parquetNumber(parquet.ValueOf(f)); bad != "" {
					return bad
				}
			}
			data[row*cols+j] = f32
			return ""
		})
	}
	var labelNum func(row int, f float64) string
	if !pf.labelText {
		labelNum = func(row int, f float64) string {
			f32 := float32(f)
			if math.IsNaN(f) {
				return "the label is NaN; every row needs a label"
			}
			if math.IsInf(float64(f32), 0) {
				if _, bad := parquetNumber(parquet.ValueOf(f)); bad != "" {
					return bad
				}
			}
			return labels.addNumber(f32)
		}
	}
	readLabel := func() error {
		return readColumn(pf.labelCol, pf.labelName, func(row int, v parquet.Value) string {
			if v.IsNull() {
				return "the label is missing (null); every row needs a label"
			}
			if pf.labelText {
				return labels.add(string(v.ByteArray()), true)
			}
			f, bad := parquetNumber(v)
			if bad != "" {
				return bad
			}
			if math.IsNaN(float64(f)) {
				return "the label is NaN; every row needs a label"
			}
			return labels.addNumber(f)
		}, labelNum)
	}
	// The column chunks in the order they lie in the file (feature -1: the label), so that the
	// row group's request is read forward once.
	order := make([]int, 0, len(pf.featCols)+1)
	order = append(order, -1)
	for j := range pf.featCols {
		order = append(order, j)
	}
	start := func(j int) int64 {
		c := pf.labelCol
		if j >= 0 {
			c = pf.featCols[j]
		}
		return pf.chunkStart(g, c)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(start(a), start(b)) })
	for _, j := range order {
		var err error
		if j < 0 {
			err = readLabel()
		} else {
			err = readFeature(j)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeBuffers are the buffers values are decoded into, made when first needed and reused
// across pages: typed numbers (readTyped) or parquet.Values (pages with nulls, dictionaries).
type decodeBuffers struct {
	values []parquet.Value
	f32    []float32
	f64    []float64
	i32    []int32
	i64    []int64
}

// readTyped reads a page's values through its typed reader, when it has one (plain-encoded
// pages of numeric columns), passing each to emit; handled is false when it has none.
func readTyped(vr parquet.ValueReader, tb *decodeBuffers, emit func(float64) string) (handled bool, msg string, err error) {
	const n = 4096
	loop := func(read func() (int, error), at func(i int) float64) (bool, string, error) {
		for {
			k, err := read()
			for i := range k {
				if msg := emit(at(i)); msg != "" {
					return true, msg, nil
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && k == 0) {
				return true, "", nil
			}
			if err != nil {
				return true, "", err
			}
		}
	}
	switch r := vr.(type) {
	case parquet.FloatReader:
		if tb.f32 == nil {
			tb.f32 = make([]float32, n)
		}
		return loop(func() (int, error) { return r.ReadFloats(tb.f32) }, func(i int) float64 { return float64(tb.f32[i]) })
	case parquet.DoubleReader:
		if tb.f64 == nil {
			tb.f64 = make([]float64, n)
		}
		return loop(func() (int, error) { return r.ReadDoubles(tb.f64) }, func(i int) float64 { return tb.f64[i] })
	case parquet.Int32Reader:
		if tb.i32 == nil {
			tb.i32 = make([]int32, n)
		}
		return loop(func() (int, error) { return r.ReadInt32s(tb.i32) }, func(i int) float64 { return float64(tb.i32[i]) })
	case parquet.Int64Reader:
		if tb.i64 == nil {
			tb.i64 = make([]int64, n)
		}
		return loop(func() (int, error) { return r.ReadInt64s(tb.i64) }, func(i int) float64 { return float64(tb.i64[i]) })
	}
	return false, "", nil
}

// parquetNumber is a feature value as float32; null is missing (NaN).
func parquetNumber(v parquet.Value) (float32, string) {
	if v.IsNull() {
		return float32(math.NaN()), ""
	}
	var f float64
	switch v.Kind() {
	case parquet.Boolean:
		if v.Boolean() {
			f = 1
		}
	case parquet.Int32:
		f = float64(v.Int32())
	case parquet.Int64:
		f = float64(v.Int64())
	case parquet.Float:
		f = float64(v.Float())
	case parquet.Double:
		f = v.Double()
	default:
		return 0, fmt.Sprintf("a %s value is not a number", v.Kind())
	}
	f32 := float32(f)
	if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
		return 0, fmt.Sprintf("%g is out of the float32 range", f)
	}
	if math.IsInf(f, 0) {
		return 0, "the value is infinite"
	}
	return f32, ""
}
