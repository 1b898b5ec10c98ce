// Package dataset loads training data (CSV, LibSVM or the built-in Iris set) as a dense float32
// matrix holding one rank's shard of the rows, after validating the whole input so that bad data
// fails on every rank of a gang with the same message.
package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
)

// Shard says which rows a rank keeps: data row i (0-based, header excluded) belongs to rank
// i % World. The zero value (World 0) means a single rank that keeps every row.
type Shard struct{ Rank, World int }

func (s Shard) normalize() (Shard, error) {
	if s.World <= 0 && s.Rank == 0 {
		return Shard{Rank: 0, World: 1}, nil
	}
	if s.World <= 0 || s.Rank < 0 || s.Rank >= s.World {
		return s, fmt.Errorf("shard: rank %d of world size %d: want 0 <= rank < world size", s.Rank, s.World)
	}
	return s, nil
}

func (s Shard) owns(row int) bool { return row%s.World == s.Rank }

// Matrix is one rank's rows of a data set. Everything but Rows, Data and Labels is computed over
// the whole input and is therefore equal on every rank.
type Matrix struct {
	Rows, Cols   int
	Data         []float32 // row-major Rows x Cols, NaN = missing
	Labels       []float32
	FeatureNames []string
	LabelName    string
	// Classes holds the sorted distinct values of a label column that holds strings (e.g. the
	// iris species); Labels are then indices into Classes. Nil for numeric labels.
	Classes []string
	// TotalRows is the number of data rows in the whole input (all ranks together).
	TotalRows int
	// LabelMin and LabelMax bound the labels of the whole input (class indices for string labels),
	// so every rank can derive the same class count or check a label range without talking to
	// the others.
	LabelMin, LabelMax float32
	// Partial says that the whole-input facts above (TotalRows, LabelMin/LabelMax, Classes) cover
	// only this rank's share: the rank read only its part files, row groups or byte range, and
	// the ranks must agree on the facts (the trainer does, before boosting).
	Partial bool
	// BytesRead is what the load read from its files or object store (sharded reads only).
	BytesRead int64
	// Categories holds, per feature column, the sorted category names of a text column (a
	// Parquet string column) whose values are then positions in that list: the column is
	// categorical. Nil entries are numeric columns; nil when no column is text. With Partial the
	// lists cover this rank's rows only, and the ranks agree on them (Recode).
	Categories [][]string
	// UnseenCategories counts the values of text columns that a fixed list (Spec.Categories)
	// lacks: they are missing values.
	UnseenCategories int
}

// Row returns row i's feature values (a view into Data).
func (m *Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// Spec names a data set. Exactly one of Path and Builtin is set.
type Spec struct {
	// Path is a file, a folder of part files, or an object store URI: s3://bucket/key,
	// s3://bucket/prefix/ (the part files under it), or minio://... as Kubeflow Pipelines names
	// its artifacts. Folders, object stores and Parquet are read in shares (see loadParts).
	Path string
	// Format is "csv", "parquet" or "libsvm"; empty means by the file extension (.csv, .parquet,
	// .libsvm, .svm; an extra .gz means gzip-compressed).
	Format string
	// ObjectStore says how to reach the store of an s3:// or minio:// Path.
	ObjectStore ObjectStore
	// Log, when set, receives progress lines (bytes and rows read) of sharded reads, at most one
	// per ProgressEvery (0: DefaultProgressEvery).
	Log           *slog.Logger
	ProgressEvery time.Duration
	// Builtin names a data set compiled into the binary: "iris".
	Builtin string
	// Label is the label column of a CSV file (required for CSV; for iris empty or "species").
	Label string
	// Features are the CSV feature columns in this order; nil means every column but the label.
	Features []string
	// Classes, when set, fixes the class list of a string label column instead of deriving it
	// from this file: an evaluation file must use the training data's class indices even when it
	// lacks some class. A label outside Classes is an error.
	Classes []string
	// Categories, when set, fixes the category names of text feature columns by feature name
	// instead of deriving them from this file: an evaluation file must use the training data's
	// codes. A name outside its column's list is a missing value (counted in
	// Matrix.UnseenCategories): the model has no code for it.
	Categories map[string][]string
	// NumFeatures, when > 0, fixes Cols of a LibSVM file (e.g. to the training data's), instead
	// of max feature index + 1 of this file; a larger index is an error.
	NumFeatures int
	// Limits bound the memory loading may take.
	Limits Limits
	// SplitFileBytes is the size from which one local, uncompressed CSV file is split between
	// the ranks by byte range, like an object (0: DefaultSplitFileBytes; < 0: never). A smaller
	// file is read whole by every rank, which keeps the rows i % World: every rank then checks
	// every line and fails identically, with line numbers from the top of the file.
	SplitFileBytes int64
}

// DefaultSplitFileBytes is Spec.SplitFileBytes' default. Below it, reading the whole file takes
// each rank well under a second; above it, the file's I/O and parsing are what a bigger gang is
// for, and every rank reading all of it would make the load no faster with more ranks.
const DefaultSplitFileBytes = 64 << 20

// DefaultMaxLineBytes bounds one line of input when Limits.MaxLineBytes is 0: far above any
// real CSV or LibSVM line, far below what a file without line breaks (/dev/zero, a binary file
// named .csv) would otherwise make the reader assemble.
const DefaultMaxLineBytes = 16 << 20

// Limits bound the memory a load takes. They are checked as the input is read, before the memory
// is allocated, so input that would exhaust the machine fails with a message instead of the
// kernel's OOM killer or Go's fatal "out of memory".
type Limits struct {
	// MaxLineBytes bounds one line (one CSV record, including a quoted field's line breaks);
	// 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxMatrixBytes bounds the dense matrix of this rank's rows, rows x features x 4 bytes;
	// 0 means no bound. A LibSVM file is dense once loaded: one stray large feature index makes
	// every row that wide.
	MaxMatrixBytes int64
	// MaxObjects bounds the part files of a folder or object store prefix (0: DefaultMaxObjects).
	MaxObjects int
	// MaxRowGroupBytes bounds the compressed bytes of the columns read from one Parquet row group,
	// which are one request (0: DefaultMaxRowGroupBytes).
	MaxRowGroupBytes int64
}

func (l Limits) maxLine() int {
	if l.MaxLineBytes <= 0 {
		return DefaultMaxLineBytes
	}
	return l.MaxLineBytes
}

// matrixFits reports whether rows x cols float32 values stay within the bound.
func (l Limits) matrixFits(rows, cols int) bool {
	return l.MaxMatrixBytes <= 0 || int64(rows)*int64(cols)*4 <= l.MaxMatrixBytes
}

// errLineTooLong is a line longer than Limits.MaxLineBytes; the loaders turn it into a DataError
// with the line number.
var errLineTooLong = errors.New("line too long")

func lineTooLongError(file string, line, max int) *DataError {
	return &DataError{File: file, Line: line, Msg: fmt.Sprintf(
		"the line is longer than %d bytes (--max-line-bytes): the file is not line-oriented CSV or LibSVM text, or, if its lines really are this long, raise --max-line-bytes",
		max)}
}

// MatrixTooLargeError is a load stopped by Limits.MaxMatrixBytes. The DataError that reports it
// wraps it (errors.As finds it), so that a caller whose bound has another name than the trainer's
// --max-matrix-bytes can say what to do in its own terms.
type MatrixTooLargeError struct {
	// Rows are the rows this rank kept, counting the one that did not fit; Cols its features.
	Rows, Cols int
	// Bytes is Rows x Cols x 4; Max the bound it passed.
	Bytes, Max uint64
}

func matrixTooLargeError(file string, s Shard, rows, cols int, l Limits, why string) *DataError {
	need := uint64(rows) * uint64(cols) * 4
	return &DataError{File: file, Err: &MatrixTooLargeError{Rows: rows, Cols: cols, Bytes: need, Max: uint64(l.MaxMatrixBytes)}, Msg: fmt.Sprintf(
		"rank %d's rows need a dense matrix of at least %d rows x %d features x 4 bytes = %s, more than --max-matrix-bytes %s%s; "+
			"train on more ranks (each keeps 1/world of the rows), use fewer features, or raise --max-matrix-bytes if the memory is there",
		s.Rank, rows, cols, sysmem.FormatBytes(need), sysmem.FormatBytes(uint64(l.MaxMatrixBytes)), why)}
}

func (e *MatrixTooLargeError) Error() string {
	return fmt.Sprintf("%d rows x %d features x 4 bytes = %s, more than the bound of %s",
		e.Rows, e.Cols, sysmem.FormatBytes(e.Bytes), sysmem.FormatBytes(e.Max))
}

// Load reads the data set spec names and keeps shard s's rows.
func Load(spec Spec, s Shard) (*Matrix, error) {
	m, err := load(spec, s)
	if err != nil {
		return nil, err
	}
	return m, spec.nameCodes(m)
}

func load(spec Spec, s Shard) (*Matrix, error) {
	switch {
	case spec.Builtin != "" && spec.Path != "":
		return nil, fmt.Errorf("data set: give a path (%q) or a built-in data set (%q), not both", spec.Path, spec.Builtin)
	case spec.Builtin != "":
		if !strings.EqualFold(spec.Builtin, "iris") {
			return nil, fmt.Errorf("built-in data set %q: unknown (have: iris)", spec.Builtin)
		}
		if spec.Label != "" && spec.Label != irisLabel {
			return nil, fmt.Errorf("built-in data set iris: label %q: the label column is %q", spec.Label, irisLabel)
		}
		return loadCSVReader(strings.NewReader(irisCSV), "iris.csv", csvOptions{label: irisLabel, features: spec.Features, classes: spec.Classes, limits: spec.Limits}, s)
	case spec.Path == "":
		return nil, fmt.Errorf("data set: no path and no built-in data set given")
	}
	if usesParts(spec) || splitsLocalCSV(spec, s) {
		return loadParts(spec, s)
	}
	read, err := spec.reader(s)
	if err != nil {
		return nil, err
	}
	if o, ok := spec.localCSV(); ok {
		open := func() (io.ReadCloser, error) {
			f, err := os.Open(spec.Path)
			if err != nil {
				return nil, fmt.Errorf("open data: %w", err)
			}
			return f, nil
		}
		return loadCSVOpen(nil, open, spec.Path, o, s)
	}
	f, err := openData(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	defer f.Close()
	return read(f)
}

// LoadReader reads the data set from r, as it is (no decompression), instead of opening
// spec.Path; spec.Path names the data in messages, and spec.Format (or spec.Path's extension)
// says its format. A caller that streams the data (from a URL, through its own bounds) uses it.
func LoadReader(r io.Reader, spec Spec, s Shard) (*Matrix, error) {
	if spec.Builtin != "" {
		return nil, fmt.Errorf("data set: a built-in data set (%q) is not read from a stream", spec.Builtin)
	}
	read, err := spec.reader(s)
	if err != nil {
		return nil, err
	}
	m, err := read(r)
	if err != nil {
		return nil, err
	}
	return m, spec.nameCodes(m)
}

// reader checks spec (before any file is opened) and returns the parser of its format.
func (spec Spec) reader(s Shard) (func(io.Reader) (*Matrix, error), error) {
	format := strings.ToLower(spec.Format)
	if format == "" {
		var err error
		if format, err = sniffFormat(spec.Path); err != nil {
			return nil, err
		}
	}
	switch format {
	case "csv":
		if spec.Label == "" {
			return nil, &DataError{File: spec.Path, Msg: "no label column given (CSV needs the label column's name)"}
		}
		o, _ := spec.localCSV()
		return func(r io.Reader) (*Matrix, error) { return loadCSVReader(r, spec.Path, o, s) }, nil
	case "libsvm":
		if len(spec.Features) > 0 {
			return nil, &DataError{File: spec.Path, Msg: "feature columns cannot be chosen by name in LibSVM data"}
		}
		return func(r io.Reader) (*Matrix, error) {
			return loadLibSVMReader(r, spec.Path, spec.NumFeatures, spec.Limits, s)
		}, nil
	case "parquet":
		return nil, &DataError{File: spec.Path, Msg: "Parquet is read from a file or an object store, not a stream"}
	default:
		return nil, fmt.Errorf("data format %q: want csv, parquet or libsvm", spec.Format)
	}
}

// localCSV returns the options of spec's CSV data, and whether it is an uncompressed local file
// (which has a size and can be read again).
func (spec Spec) localCSV() (csvOptions, bool) {
	o := csvOptions{label: spec.Label, features: spec.Features, classes: spec.Classes, limits: spec.Limits}
	format := strings.ToLower(spec.Format)
	if format == "" {
		format, _ = sniffFormat(spec.Path)
	}
	if format != "csv" || strings.HasSuffix(strings.ToLower(spec.Path), ".gz") {
		return o, false
	}
	st, err := os.Stat(spec.Path)
	if err != nil || !st.Mode().IsRegular() {
		return o, false
	}
	o.sizeHint = st.Size()
	return o, true
}

func sniffFormat(path string) (string, error) {
	ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(strings.ToLower(path), ".gz")))
	switch ext {
	case ".csv":
		return "csv", nil
	case ".libsvm", ".svm", ".svmlight":
		return "libsvm", nil
	case ".parquet", ".parq":
		return "parquet", nil
	}
	return "", fmt.Errorf("%s: cannot tell the data format from the extension %q: name the format (csv, parquet or libsvm)", path, ext)
}

// splitsLocalCSV reports whether spec is one local, uncompressed CSV file that shard s reads
// only its byte range of (Spec.SplitFileBytes).
func splitsLocalCSV(spec Spec, s Shard) bool {
	if s.World <= 1 || spec.SplitFileBytes < 0 || strings.HasSuffix(strings.ToLower(spec.Path), ".gz") {
		return false
	}
	format := strings.ToLower(spec.Format)
	if format == "" {
		format, _ = sniffFormat(spec.Path)
	}
	if format != "csv" {
		return false
	}
	st, err := os.Stat(spec.Path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	threshold := spec.SplitFileBytes
	if threshold == 0 {
		threshold = DefaultSplitFileBytes
	}
	return st.Size() >= threshold
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// maxReadBufferBytes is the read buffer of a text file's loader: a megabyte, for few reads of a
// large file.
const maxReadBufferBytes = 1 << 20

// readLongLine returns br's next line with its line ending: in br's buffer, or, for a line
// longer than the buffer, assembled in *long. A line longer than maxLine without its ending is
// errLineTooLong, found before more than maxLine bytes and one buffer are held.
func readLongLine(br *bufio.Reader, long *[]byte, maxLine int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		*long = append((*long)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(*long) > maxLine {
				return nil, errLineTooLong
			}
			line, err = br.ReadSlice('\n')
			*long = append(*long, line...)
		}
		line = *long
	}
	if len(bytes.TrimRight(line, "\r\n")) > maxLine {
		return nil, errLineTooLong
	}
	return line, err
}

// readBufferBytes is the read buffer for r: maxReadBufferBytes, or less when r says how much it
// holds (a regular file's size, an in-memory reader's length), so that loading a small file
// does not allocate and clear a megabyte. The size only bounds how much one read takes: a
// line longer than the buffer is still read (up to the line limit), so a file that grows while
// it is read loses nothing.
func readBufferBytes(r io.Reader) int {
	size := int64(-1)
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		size = int64(v.Len())
	case *os.File:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size < 0 || size >= maxReadBufferBytes {
		return maxReadBufferBytes
	}
	// One byte more than the data: the last read then finds its end, not a full buffer.
	return max(int(size)+1, 4<<10)
}

// openData opens path, decompressing it when its name ends in .gz.
func openData(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, &DataError{File: path, Msg: "not a gzip file: " + err.Error()}
	}
	return gzipFile{z, f}, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	err := g.Reader.Close()
	if ferr := g.f.Close(); err == nil {
		err = ferr
	}
	return err
}

// DataError is bad input data, located by file, line (1-based) and column (1-based field index).
// Every rank reports the same DataError for the same file.
type DataError struct {
	File       string
	Line       int // 0 when the problem is not on one line
	Column     int // 0 when the problem is not in one column
	ColumnName string
	Msg        string
	// Err, when set, is the kind of problem in a form a program can read (e.g. a
	// *MatrixTooLargeError); Msg says it for people.
	Err error
}

func (e *DataError) Unwrap() error { return e.Err }

func (e *DataError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	switch {
	case e.Column > 0:
		fmt.Fprintf(&b, "column %d %q: ", e.Column, e.ColumnName)
	case e.ColumnName != "":
		fmt.Fprintf(&b, "column %q: ", e.ColumnName)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// emptyShardError says that the rank has nothing to train on, which libxgboost would otherwise
// accept and silently train a degenerate model on.
func emptyShardError(file string, s Shard, total int) error {
	return &DataError{File: file, Msg: fmt.Sprintf(
		"rank %d of %d gets no rows: the data has %d rows and row i goes to rank i mod %d; use at most %d ranks",
		s.Rank, s.World, total, s.World, total)}
}
