// Package prepare turns a data set (the built-in Iris, or a CSV on the claim, on disk or behind an
// http(s) URL) into what the trainer and the evaluation read: datasets/<name>/train.csv, test.csv
// and schema.json on the claim, split the same way for the same seed on every machine.
package prepare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/dataschema"
	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
	"github.com/gangboost/gangboost/internal/training/dataset"
)

// Files in a data set's folder.
const (
	TrainFile  = "train.csv"
	TestFile   = "test.csv"
	SchemaFile = "schema.json"
)

// maxIntegerClasses bounds the distinct values of an integer label column that is split as class
// labels. Beyond it the column is a count or a price (a regression target): stratifying by each
// value would leave most values with a single row, and such a row never lands in the test set.
const maxIntegerClasses = 100

// Options say what to prepare.
type Options struct {
	// Dataset is "iris" for the built-in Iris, else a CSV: a path on the claim, an absolute path,
	// or an http(s) URL.
	Dataset string
	// Name is the data set's folder under datasets/ on the claim.
	Name string
	// Label is the CSV's label column (required for a CSV; Iris: empty or "species").
	Label        string
	TestFraction float64
	Seed         int64
	// Claim is where this process sees the claim (pvc_mount_path).
	Claim string
	// Fetch reads an http(s) URL; nil uses http.DefaultClient.
	Fetch Fetcher
	// ObjectStore reaches an s3:// or minio:// Dataset (credentials: AWS_* environment).
	ObjectStore dataset.ObjectStore
	// Limits bound the download and decompression of the data set.
	Limits Limits
	Log    io.Writer
}

// Result is what Run wrote.
type Result struct {
	// TrainPath and TestPath are claim-relative, as the trainer and evaluate take them.
	TrainPath, TestPath, SchemaPath string
	Schema                          *Schema
}

// Run reads the data set, splits it and publishes the folder datasets/<name> on the claim.
func Run(ctx context.Context, o Options) (*Result, error) {
	rel, err := claim.DatasetPath(o.Name)
	if err != nil {
		return nil, err
	}
	if !(o.TestFraction > 0 && o.TestFraction < 1) {
		return nil, fmt.Errorf("test_fraction = %v: want a fraction strictly between 0 and 1 (e.g. 0.2)", o.TestFraction)
	}
	if o.Claim == "" {
		return nil, errors.New("no claim folder (pvc_mount_path) given")
	}
	// A claim this step cannot write fails now, not after the download and the split.
	if err := claim.CheckWritable(o.Claim, claim.DatasetsDir); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	m, source, err := load(ctx, o, logf)
	if err != nil {
		return nil, err
	}
	labelType := labelTypeOf(m)
	stratified := m.Classes != nil
	split := m
	if labelType == LabelInteger {
		if classed, ok := integerClasses(m); ok {
			split, stratified = classed, true
		}
	}
	train, test := dataset.SplitTrainTest(split, o.TestFraction, o.Seed)
	if train.Rows == 0 || test.Rows == 0 {
		return nil, &dataset.DataError{File: source, Msg: fmt.Sprintf(
			"%d data rows with test_fraction %v give %d training and %d test rows; the split needs at least one of each: give more rows or change test_fraction",
			m.Rows, o.TestFraction, train.Rows, test.Rows)}
	}
	schema := newSchema(m, train, test, split.Classes, labelType, stratified)
	schema.Source, schema.TestFraction, schema.Seed = source, o.TestFraction, o.Seed
	if err := checkText(source, schema); err != nil {
		return nil, err
	}

	dir, err := claim.Join(o.Claim, rel)
	if err != nil {
		return nil, err
	}
	if err := publish(dir, train, test, schema); err != nil {
		return nil, err
	}
	res := &Result{TrainPath: path.Join(rel, TrainFile), TestPath: path.Join(rel, TestFile),
		SchemaPath: path.Join(rel, SchemaFile), Schema: schema}
	logf("wrote %s (%d rows) and %s (%d rows) to the claim at %s; label %q%s",
		res.TrainPath, train.Rows, res.TestPath, test.Rows, o.Claim, schema.Label, classNote(schema))
	for _, c := range schema.Columns {
		if c.Type == dataschema.TypeCategory {
			logf("column %q names %d categories %s: the split files hold their codes (a name's position), which %s records", c.Name, len(c.Categories), clip(c.Categories), res.SchemaPath)
		}
	}
	return res, nil
}

// clip is names for a log line: the first few.
func clip(names []string) string {
	const few = 5
	if len(names) <= few {
		return fmt.Sprintf("%q", names)
	}
	return fmt.Sprintf("%q and %d more", names[:few], len(names)-few)
}

func classNote(s *Schema) string {
	if !s.Stratified {
		return ", random split"
	}
	return fmt.Sprintf(", %d classes, stratified split", len(s.Classes))
}

// checkText refuses column names and class labels that are not UTF-8 text, before anything is
// written: schema.json and the step's outputs (KFP's metadata is protobuf, whose strings must be
// UTF-8) could not carry them, and a step that failed after writing the split would leave files
// no output points to.
func checkText(source string, s *Schema) error {
	for i, c := range s.Columns {
		if !utf8.ValidString(c.Name) {
			return &dataset.DataError{File: source, Msg: fmt.Sprintf("column %d name %q is not UTF-8 text: save the CSV as UTF-8", i+1, c.Name)}
		}
	}
	for _, c := range s.Columns {
		for _, name := range c.Categories {
			if !utf8.ValidString(name) {
				return &dataset.DataError{File: source, Msg: fmt.Sprintf("column %q: category %q is not UTF-8 text: write the data as UTF-8", c.Name, name)}
			}
		}
	}
	for _, c := range s.Classes {
		if !utf8.ValidString(c) {
			return &dataset.DataError{File: source, Msg: fmt.Sprintf("label %q: class %q is not UTF-8 text: save the CSV as UTF-8", s.Label, c)}
		}
	}
	return nil
}

// load reads the data set o names; source is how messages and schema.json name it.
func load(ctx context.Context, o Options, logf func(string, ...any)) (m *dataset.Matrix, source string, err error) {
	if strings.EqualFold(o.Dataset, "iris") {
		if o.Label != "" && o.Label != "species" {
			return nil, "", fmt.Errorf("built-in data set iris: label %q: its label column is \"species\"", o.Label)
		}
		m, err := dataset.Load(dataset.Spec{Builtin: "iris"}, dataset.Shard{})
		return m, "builtin:iris", err
	}
	if o.Dataset == "" {
		return nil, "", errors.New(`dataset: empty; give "iris" or a CSV (a path on the claim, an absolute path or an http(s) URL)`)
	}
	if o.Label == "" {
		return nil, "", fmt.Errorf("dataset %s: no label column given (label is required for a CSV)", o.Dataset)
	}
	maxMatrix, given := o.Limits.MaxMatrixBytes, o.Limits.MaxMatrixBytes > 0
	if !given {
		maxMatrix = defaultMaxMatrix(logf)
	}
	if dataset.IsObjectURI(o.Dataset) || isParquetOrFolder(o) {
		// An object, a prefix of part files, a Parquet file or a folder of parts: read whole (one
		// rank) through the dataset loader, which lists, bounds and checks them.
		p := o.Dataset
		if !dataset.IsObjectURI(p) {
			if p, err = claimPath(o.Claim, p); err != nil {
				return nil, "", err
			}
		}
		logf("reading %s", o.Dataset)
		m, err := dataset.Load(dataset.Spec{Path: p, Label: o.Label, ObjectStore: o.ObjectStore,
			Limits: dataset.Limits{MaxMatrixBytes: maxMatrix}}, dataset.Shard{})
		if mt := (*dataset.MatrixTooLargeError)(nil); errors.As(err, &mt) {
			return nil, "", matrixTooLarge(o.Dataset, mt, given)
		}
		if err != nil {
			return nil, "", err
		}
		logf("read %d rows (%s) from %s", m.Rows, sysmem.FormatBytes(uint64(max(m.BytesRead, 0))), o.Dataset)
		return m, o.Dataset, nil
	}
	r, source, err := open(ctx, o)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	if isURL(source) {
		logf("reading %s as it downloads", source)
	}
	m, err = dataset.LoadReader(r, dataset.Spec{Path: source, Format: "csv", Label: o.Label,
		Limits: dataset.Limits{MaxMatrixBytes: maxMatrix}}, dataset.Shard{})
	if mt := (*dataset.MatrixTooLargeError)(nil); errors.As(err, &mt) {
		return nil, "", matrixTooLarge(source, mt, given)
	}
	if err != nil {
		return nil, "", err
	}
	return m, source, nil
}

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = sysmem.Available

// defaultMaxMatrix is max_matrix_bytes when not given: an eighth of the memory this process may
// still take. The matrix is not the only copy of the data: while it is parsed the labels take 8
// bytes a row, then the split copies the rows into train and test and the two CSVs are formatted
// in memory before they are published. A 2-feature CSV that just fits a 64 MiB bound peaks at 4
// times the bound live (260 MiB RSS with the heap held to it), 7.5 times with Go's collector left
// to let the heap grow to twice what is live (470 MiB); hence also limitHeap.
func defaultMaxMatrix(logf func(string, ...any)) int64 {
	avail, err := availableMemory()
	if err != nil {
		logf("no bound on the parsed data: cannot tell the memory available (%v); give max_matrix_bytes", err)
		return 0
	}
	return int64(min(avail/8, math.MaxInt64))
}

// limitHeap tells Go's collector the memory this process may take (unless GOMEMLIMIT says
// otherwise), so that it collects harder near the pod's limit instead of letting the heap reach
// twice what is live and the OOM killer end the step.
func limitHeap() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if avail, err := availableMemory(); err == nil {
		debug.SetMemoryLimit(int64(min(avail, math.MaxInt64)))
	}
}

// matrixTooLarge says, in the component's terms, that the parsed rows passed max_matrix_bytes.
func matrixTooLarge(source string, mt *dataset.MatrixTooLargeError, given bool) error {
	bound := "max_matrix_bytes " + sysmem.FormatBytes(mt.Max)
	if !given {
		bound += " (not given: an eighth of the memory this step may take)"
	}
	return &dataset.DataError{File: source, Err: mt, Msg: fmt.Sprintf(
		"after %d data rows the parsed data set (%d features x 4 bytes a row) would need more than %s; "+
			"the step holds every row in memory for the split: raise max_matrix_bytes if the memory is there, or give the step's pod more memory",
		mt.Rows-1, mt.Cols, bound)}
}

// open opens the CSV o names (a URL, an absolute path or a path on the claim) as a stream of
// text: gzip decoded, within o's limits, ending once ctx is done; source names it in messages.
func open(ctx context.Context, o Options) (r io.ReadCloser, source string, err error) {
	lim := o.Limits.withDefaults()
	var raw io.ReadCloser
	switch source = o.Dataset; {
	case isURL(o.Dataset):
		f := o.Fetch
		if f == nil {
			f = HTTPFetcher{}
		}
		if raw, err = openURL(ctx, f, o.Dataset, lim); err != nil {
			return nil, "", err
		}
	case filepath.IsAbs(o.Dataset):
		if raw, err = openFile(o.Dataset, o.Dataset); err != nil {
			return nil, "", err
		}
	default:
		var local string
		if local, err = claim.Join(o.Claim, o.Dataset); err != nil {
			return nil, "", fmt.Errorf("dataset %q: a path on the claim may not leave the claim: %w", o.Dataset, err)
		}
		// Named as the user gave it, not where this step mounts the claim.
		if raw, err = openFile(local, o.Dataset); err != nil {
			return nil, "", err
		}
	}
	text, err := decode(raw, lim.MaxGzipRatio)
	if err != nil {
		raw.Close()
		return nil, "", fmt.Errorf("dataset %s: %w", source, err)
	}
	return readCloser{stoppable{ctx, text}, raw}, source, nil
}

func isURL(dataset string) bool {
	return strings.HasPrefix(dataset, "http://") || strings.HasPrefix(dataset, "https://")
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Label types schema.json records.
const (
	LabelString  = "string"
	LabelInteger = "integer"
	LabelFloat   = "float"
)

func labelTypeOf(m *dataset.Matrix) string {
	if m.Classes != nil {
		return LabelString
	}
	for _, l := range m.Labels {
		if float64(l) != math.Trunc(float64(l)) {
			return LabelFloat
		}
	}
	return LabelInteger
}

// integerClasses views integer labels as classes (sorted by value) so the split can stratify by
// them; the class names are the values as the CSV writes them, so the files read back as numbers.
func integerClasses(m *dataset.Matrix) (*dataset.Matrix, bool) {
	var values []float32
	seen := map[float32]bool{}
	for _, l := range m.Labels {
		if !seen[l] {
			if len(values) == maxIntegerClasses {
				return nil, false
			}
			seen[l] = true
			values = append(values, l)
		}
	}
	slices.Sort(values)
	index := make(map[float32]float32, len(values))
	c := *m
	c.Classes = make([]string, len(values))
	for i, v := range values {
		index[v] = float32(i)
		c.Classes[i] = strconv.FormatFloat(float64(v), 'g', -1, 32)
	}
	c.Labels = make([]float32, len(m.Labels))
	for i, l := range m.Labels {
		c.Labels[i] = index[l]
	}
	return &c, true
}

// claimPath is a local data set's path as this step sees it: absolute, or on the claim.
func claimPath(claimDir, p string) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	local, err := claim.Join(claimDir, p)
	if err != nil {
		return "", fmt.Errorf("dataset %q: a path on the claim may not leave the claim: %w", p, err)
	}
	return local, nil
}

// isParquetOrFolder reports whether o's data set on disk is Parquet or a folder of part files.
func isParquetOrFolder(o Options) bool {
	if isURL(o.Dataset) {
		return false
	}
	lower := strings.ToLower(o.Dataset)
	if strings.HasSuffix(lower, ".parquet") || strings.HasSuffix(lower, ".parq") {
		return true
	}
	p, err := claimPath(o.Claim, o.Dataset)
	if err != nil {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
