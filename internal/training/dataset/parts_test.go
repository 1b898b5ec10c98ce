package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// higgsRow is a Parquet row of the test data: a few numeric features (one nullable) and a label.
type higgsRow struct {
	F0    float32  `parquet:"f0"`
	F1    float64  `parquet:"f1"`
	F2    int64    `parquet:"f2"`
	F3    *float32 `parquet:"f3,optional"`
	Label float32  `parquet:"label"`
}

// testRows makes n rows whose f0 is the row's global index, so a test can tell which rows a
// rank holds.
func testRows(first, n int) []higgsRow {
	rows := make([]higgsRow, n)
	for i := range rows {
		g := first + i
		var f3 *float32
		if g%7 != 0 {
			v := float32(g) / 2
			f3 = &v
		}
		rows[i] = higgsRow{F0: float32(g), F1: float64(g) * 0.25, F2: int64(g % 11), F3: f3, Label: float32(g % 2)}
	}
	return rows
}

func parquetBytes[T any](t testing.TB, rows []T, rowsPerGroup int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[T](&b, parquet.MaxRowsPerRowGroup(int64(rowsPerGroup)))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// globalRows returns the f0 values (global row indexes) a matrix holds, checking every row's
// other values against testRows.
func globalRows(t *testing.T, m *Matrix) []int {
	t.Helper()
	var got []int
	for i := 0; i < m.Rows; i++ {
		r := m.Row(i)
		g := int(r[0])
		want := testRows(g, 1)[0]
		f3 := float32(math.NaN())
		if want.F3 != nil {
			f3 = *want.F3
		}
		if r[1] != float32(want.F1) || r[2] != float32(want.F2) || !(r[3] == f3 || math.IsNaN(float64(f3)) && math.IsNaN(float64(r[3]))) || m.Labels[i] != want.Label {
			t.Fatalf("row %d (global %d) = %v label %v, want %+v", i, g, r, m.Labels[i], want)
		}
		got = append(got, g)
	}
	return got
}

func TestAssignBalancesBySizeAndAgreesAcrossRanks(t *testing.T) {
	sizes := []int64{100, 10, 60, 50, 40, 30, 20}
	seen := map[int]int{}
	var loads []int64
	for r := range 3 {
		mine := assign(sizes, r, 3)
		var load int64
		for _, i := range mine {
			seen[i]++
			load += sizes[i]
		}
		loads = append(loads, load)
	}
	if len(seen) != len(sizes) {
		t.Fatalf("items assigned: %v, want each of %d once", seen, len(sizes))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("item %d assigned %d times", i, n)
		}
	}
	if slices.Max(loads)-slices.Min(loads) > 20 {
		t.Errorf("loads %v: want within the smallest item of each other", loads)
	}
}

func TestParquetPartsEachRankReadsOnlyItsFiles(t *testing.T) {
	dir := t.TempDir()
	// Five parts of different sizes; _SUCCESS and .crc files are no data.
	starts, n := []int{0, 300, 400, 1000, 1100}, []int{300, 100, 600, 100, 500}
	for i := range starts {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", i)), parquetBytes(t, testRows(starts[i], n[i]), 128))
	}
	writeFile(t, filepath.Join(dir, "_SUCCESS"), nil)
	writeFile(t, filepath.Join(dir, ".part-00000.parquet.crc"), []byte("x"))
	for _, world := range []int{1, 2, 3, 5} {
		var all []int
		var bytesRead int64
		for r := range world {
			m, err := Load(Spec{Path: dir, Label: "label"}, Shard{r, world})
			if err != nil {
				t.Fatalf("world %d rank %d: %v", world, r, err)
			}
			if m.Partial != (world > 1) {
				t.Errorf("world %d: Partial = %v", world, m.Partial)
			}
			if !slices.Equal(m.FeatureNames, []string{"f0", "f1", "f2", "f3"}) || m.LabelName != "label" {
				t.Fatalf("columns %v label %q", m.FeatureNames, m.LabelName)
			}
			all = append(all, globalRows(t, m)...)
			bytesRead += m.BytesRead
		}
		slices.Sort(all)
		if len(all) != 1600 || all[0] != 0 || all[len(all)-1] != 1599 || len(slices.Compact(all)) != 1600 {
			t.Fatalf("world %d: the ranks hold %d rows together, want each of 1600 once", world, len(all))
		}
		t.Logf("world %d: %d bytes read by all ranks", world, bytesRead)
	}
}

func TestParquetSingleFileIsSplitByRowGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.parquet")
	data := parquetBytes(t, testRows(0, 1000), 100) // 10 row groups
	writeFile(t, path, data)
	var all []int
	for r := range 3 {
		m, err := Load(Spec{Path: path, Label: "label"}, Shard{r, 3})
		if err != nil {
			t.Fatal(err)
		}
		if m.Rows < 300 || m.Rows > 400 {
			t.Errorf("rank %d holds %d rows: want 3 or 4 row groups of 100", r, m.Rows)
		}
		if m.BytesRead >= int64(len(data))*2/3 {
			t.Errorf("rank %d read %d of the file's %d bytes: want about a third", r, m.BytesRead, len(data))
		}
		all = append(all, globalRows(t, m)...)
	}
	slices.Sort(all)
	if len(all) != 1000 || len(slices.Compact(all)) != 1000 {
		t.Fatalf("the ranks hold %d rows together, want 1000", len(all))
	}
	if _, err := Load(Spec{Path: path, Label: "label"}, Shard{10, 11}); err == nil || !strings.Contains(err.Error(), "gets no rows") {
		t.Errorf("11 ranks over 10 row groups: got %v, want a rank without rows to say so", err)
	}
}

func TestCSVSplitByByteRangeKeepsEveryLineOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("a,label,b\n")
	const n = 997
	for i := range n {
		// Lines of varied length, some with \r\n, so the range bounds fall anywhere in a line.
		end := "\n"
		if i%5 == 0 {
			end = "\r\n"
		}
		fmt.Fprintf(&b, "%d,%d,%s%s", i, i%3, strings.Repeat("1", 1+rng.IntN(30)), end)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "data.csv"), []byte(b.String()))
	for _, world := range []int{1, 2, 3, 4, 7, 50} {
		var all []int
		for r := range world {
			m, err := Load(Spec{Path: dir, Label: "label"}, Shard{r, world})
			if err != nil {
				t.Fatalf("world %d rank %d: %v", world, r, err)
			}
			for i := 0; i < m.Rows; i++ {
				g := int(m.Row(i)[0])
				if m.Labels[i] != float32(g%3) {
					t.Fatalf("world %d rank %d: row %d label %v", world, r, g, m.Labels[i])
				}
				all = append(all, g)
			}
		}
		if len(all) != n {
			t.Fatalf("world %d: %d rows in all, want %d", world, len(all), n)
		}
		for i, g := range all {
			if g != i {
				t.Fatalf("world %d: row %d is %d: want every line once, in order", world, i, g)
			}
		}
	}
}

// A local CSV file from Spec.SplitFileBytes on is split by byte range like an object: each
// rank reads about its share of the bytes, holds its lines once and in order, and knows its
// facts are partial; below the size every rank reads the whole file and keeps rows i % world.
func TestLocalCSVFileSplitFromSplitFileBytes(t *testing.T) {
	var b strings.Builder
	b.WriteString("a,label,b\n")
	const n = 300000 // about 5 MB: the readers' buffers are a small part of a share
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d.5\n", i, i%3, i*7)
	}
	path := filepath.Join(t.TempDir(), "train.csv")
	writeFile(t, path, []byte(b.String()))
	size := int64(b.Len())
	for _, world := range []int{2, 3} {
		var all []int
		for r := range world {
			m, err := Load(Spec{Path: path, Label: "label", SplitFileBytes: size}, Shard{r, world})
			if err != nil {
				t.Fatalf("world %d rank %d: %v", world, r, err)
			}
			if !m.Partial {
				t.Errorf("world %d rank %d: Partial false: the rank's facts cover only its range", world, r)
			}
			// Its range, the line that ends past it, the header, and what the buffered readers
			// fetch ahead (1 MiB for the range, 64 KiB for the header).
			if share := size / int64(world); m.BytesRead > share+share/20+(1<<20)+(64<<10) {
				t.Errorf("world %d rank %d read %d of the file's %d bytes: want about %d", world, r, m.BytesRead, size, share)
			}
			for i := 0; i < m.Rows; i++ {
				all = append(all, int(m.Row(i)[0]))
			}
		}
		if len(all) != n {
			t.Fatalf("world %d: %d rows in all, want %d", world, len(all), n)
		}
		for i, g := range all {
			if g != i {
				t.Fatalf("world %d: row %d is %d: want every line once, in order", world, i, g)
			}
		}
	}
	// One byte smaller than the threshold: read whole, rows i % world, whole-file facts.
	m, err := Load(Spec{Path: path, Label: "label", SplitFileBytes: size + 1}, Shard{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if m.Partial || m.Rows != n/3 || m.TotalRows != n || int(m.Row(0)[0]) != 1 || int(m.Row(1)[0]) != 4 {
		t.Errorf("below the threshold: Partial %v, %d rows of %d, first rows %v %v; want rows 1, 4, ... of the whole file",
			m.Partial, m.Rows, m.TotalRows, m.Row(0)[0], m.Row(1)[0])
	}
	// SplitFileBytes < 0 never splits; a gzip'd file cannot be split.
	if m, err := Load(Spec{Path: path, Label: "label", SplitFileBytes: -1}, Shard{0, 2}); err != nil || m.Partial {
		t.Errorf("SplitFileBytes -1: err %v, Partial %v; want the whole file read", err, m != nil && m.Partial)
	}
	gz := filepath.Join(t.TempDir(), "train.csv.gz")
	writeFile(t, gz, gzipBytes(t, b.String()))
	if m, err := Load(Spec{Path: gz, Label: "label", SplitFileBytes: 1}, Shard{0, 2}); err != nil || m.Partial || m.Rows != n/2 {
		t.Errorf("gzip'd file: err %v; want every rank to read it whole and keep every other row", err)
	}
}

func TestCSVPartsWithStringLabelsShareOneClassList(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), []byte("x,kind\n1,cat\n2,dog\n"))
	writeFile(t, filepath.Join(dir, "b.csv.gz"), gzipBytes(t, "x,kind\n3,ant\n4,dog\n"))
	m, err := Load(Spec{Path: dir, Label: "kind"}, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Classes, []string{"ant", "cat", "dog"}) || !slices.Equal(m.Labels, []float32{1, 2, 0, 2}) {
		t.Errorf("classes %v labels %v, want [ant cat dog] [1 2 0 2]", m.Classes, m.Labels)
	}
}

type nestedRow struct {
	F0    float32 `parquet:"f0"`
	Point struct {
		X float32 `parquet:"x"`
	} `parquet:"point"`
	Label float32 `parquet:"label"`
}

type textRow struct {
	F0    float32 `parquet:"f0"`
	City  string  `parquet:"city"`
	Label string  `parquet:"label"`
}

type otherRow struct {
	G0    float32 `parquet:"g0"`
	Label float32 `parquet:"label"`
}

type nullLabelRow struct {
	F0    float32  `parquet:"f0"`
	Label *float32 `parquet:"label,optional"`
}

func TestParquetBadInputIsAClearError(t *testing.T) {
	good := parquetBytes(t, testRows(0, 50), 10)
	cases := []struct {
		name  string
		files map[string][]byte
		spec  Spec
		want  []string
	}{
		{"nested column", map[string][]byte{"a.parquet": parquetBytes(t, []nestedRow{{F0: 1, Label: 1}}, 10)}, Spec{Label: "label"},
			[]string{"a.parquet", `"point"`, "nested"}},
		{"corrupt footer length", map[string][]byte{"a.parquet": damageFooterLength(good)}, Spec{Label: "label"},
			[]string{"a.parquet", "footer", "damaged"}},
		{"not parquet", map[string][]byte{"a.parquet": []byte("f0,label\n1,2\n")}, Spec{Label: "label"},
			[]string{"a.parquet", "PAR1"}},
		{"parts differ in schema", map[string][]byte{"a.parquet": good, "b.parquet": parquetBytes(t, []otherRow{{1, 1}}, 10)}, Spec{Label: "label"},
			[]string{"b.parquet", "differ"}},
		{"free text feature", map[string][]byte{"a.parquet": parquetBytes(t, []textRow{{1, "Oslo", "a"}, {2, strings.Repeat("x", 2000), "b"}}, 10)}, Spec{Label: "label"},
			[]string{`"city"`, "row group 0, row 1", "2000 bytes", "--features"}},
		{"missing label column", map[string][]byte{"a.parquet": good}, Spec{Label: "Label"},
			[]string{"a.parquet", `no label column "Label"`, `did you mean "label"`}},
		{"null label", map[string][]byte{"a.parquet": parquetBytes(t, []nullLabelRow{{F0: 1}}, 10)}, Spec{Label: "label"},
			[]string{"a.parquet", "row group 0, row 0", "label is missing"}},
		{"NaN label", map[string][]byte{"a.parquet": parquetBytes(t, []otherRow{{1, 2}, {3, float32(math.NaN())}}, 10)}, Spec{Label: "label"},
			[]string{"a.parquet", "row group 0, row 1", "label is NaN"}},
		{"huge row group", map[string][]byte{"a.parquet": good}, Spec{Label: "label", Limits: Limits{MaxRowGroupBytes: 64}},
			[]string{"a.parquet", "row group 0", "smaller row groups"}},
		{"matrix bound", map[string][]byte{"a.parquet": good}, Spec{Label: "label", Limits: Limits{MaxMatrixBytes: 100}},
			[]string{"--max-matrix-bytes"}},
		{"too many parts", map[string][]byte{"a.parquet": good, "b.parquet": good, "c.parquet": good}, Spec{Label: "label", Limits: Limits{MaxObjects: 2}},
			[]string{"more than 2 files", "fewer, larger files"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range c.files {
				writeFile(t, filepath.Join(dir, name), b)
			}
			spec := c.spec
			spec.Path = dir
			_, err := Load(spec, Shard{})
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// damageFooterLength sets the footer length field to 3 GiB.
func damageFooterLength(b []byte) []byte {
	b = slices.Clone(b)
	binary.LittleEndian.PutUint32(b[len(b)-8:], 3<<30)
	return b
}

func TestDataErrorsAreDataErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.parquet"), []byte("nope"))
	_, err := Load(Spec{Path: dir, Label: "label"}, Shard{})
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("%v: want a *DataError", err)
	}
}

func gzipBytes(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(s))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestProgressIsPerIntervalNotPerChunk: a load of many parts and row groups logs one line at the
// end (with the bytes and rows it read) when no interval passed, not a line per part or chunk.
func TestProgressIsPerIntervalNotPerChunk(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("p%d.parquet", i)), parquetBytes(t, testRows(i*100, 100), 10))
	}
	var logs bytes.Buffer
	m, err := Load(Spec{Path: dir, Label: "label", Log: slog.New(slog.NewTextHandler(&logs, nil)), ProgressEvery: time.Hour}, Shard{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="data read"`) || !strings.Contains(lines[0], fmt.Sprintf("bytes_read=%d", m.BytesRead)) ||
		!strings.Contains(lines[0], "rows_read=400") || !strings.Contains(lines[0], "rank=1") {
		t.Errorf("progress lines:\n%s\nwant one data read line with rank=1, bytes_read=%d, rows_read=400", logs.String(), m.BytesRead)
	}
}

// TestParquetRowGroupBoundCountsUncompressedBytes: a row group that compresses well but would
// decode to far more than the bound is refused before its pages are decoded.
func TestParquetRowGroupBoundCountsUncompressedBytes(t *testing.T) {
	rows := make([]otherRow, 20000) // constant values: a few bytes compressed, 160 kB decoded
	dir := t.TempDir()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[otherRow](&b, parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.parquet"), b.Bytes())
	pf, err := openParquet(&localStore{path: dir, c: &byteCounter{}}, part{Name: filepath.Join(dir, "a.parquet"), Size: int64(b.Len())}, csvOptions{label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	off, end := pf.rowGroupSpan(0)
	bound := (end - off) * 2 // the compressed bytes fit
	if 4*bound >= 160000 {
		t.Fatalf("the row group takes %d bytes compressed: too many for this test", end-off)
	}
	_, err = Load(Spec{Path: dir, Label: "label", Limits: Limits{MaxRowGroupBytes: bound}}, Shard{})
	if err == nil || !strings.Contains(err.Error(), "uncompressed") {
		t.Fatalf("error %v, want the row group refused for its uncompressed size", err)
	}
}

// labelFirstRow has its label as the first column (as the original HIGGS file has).
type labelFirstRow struct {
	Label float32 `parquet:"label"`
	F0    float32 `parquet:"f0"`
	F1    float64 `parquet:"f1"`
	F2    int64   `parquet:"f2"`
}

// requestCounter counts the requests a load makes of its store.
type requestCounter struct {
	store
	opens, readAts int
}

func (s *requestCounter) open(p part, off, n int64) (io.ReadCloser, error) {
	s.opens++
	return s.store.open(p, off, n)
}

func (s *requestCounter) readAt(p part, b []byte, off int64) error {
	s.readAts++
	return s.store.readAt(p, b, off)
}

// TestParquetRowGroupIsOneForwardRequest: a row group is one request whatever the order of
// the columns asked for (the label first in the file, features reordered), read forward rather
// than held in memory. Opening the file takes three small reads: the magic bytes at its start,
// the footer's length and the footer.
func TestParquetRowGroupIsOneForwardRequest(t *testing.T) {
	rows := make([]labelFirstRow, 1000)
	for i := range rows {
		rows[i] = labelFirstRow{Label: float32(i % 3), F0: float32(i), F1: float64(i) / 4, F2: int64(i % 5)}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a.parquet")
	writeFile(t, path, parquetBytes(t, rows, 128)) // 8 row groups
	for _, features := range [][]string{nil, {"f2", "f0"}} {
		st := &requestCounter{store: &localStore{path: dir, c: &byteCounter{}}}
		ps, err := st.parts(10)
		if err != nil {
			t.Fatal(err)
		}
		var read atomic.Int64
		m, err := loadParquetParts(st, ps, Spec{Path: dir, Label: "label", Features: features}, Shard{0, 1}, &read)
		if err != nil {
			t.Fatal(err)
		}
		if st.opens != 8 || st.readAts != 3 {
			t.Errorf("features %v: %d row group requests and %d other reads, want 8 and 3 (magic, footer length, footer)", features, st.opens, st.readAts)
		}
		for i, r := range rows {
			want := []float32{r.F0, float32(r.F1), float32(r.F2)}
			if features != nil {
				want = []float32{float32(r.F2), r.F0}
			}
			if !slices.Equal(m.Row(i), want) || m.Labels[i] != r.Label {
				t.Fatalf("features %v: row %d = %v label %v, want %v label %v", features, i, m.Row(i), m.Labels[i], want, r.Label)
			}
		}
	}
}

// Evaluation data in Parquet whose label column is numeric, for a model trained on class names:
// each number is the class name CSV would read (1, not 1.0), so labels "0" and "1" map to the
// training data's classes and any other number is an error naming it, never an empty label list.
func TestParquetNumericLabelsAgainstClassNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval.parquet")
	writeFile(t, path, parquetBytes(t, testRows(0, 10), 4))
	m, err := Load(Spec{Path: path, Label: "label", Classes: []string{"0", "1"}}, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	if !slices.Equal(m.Labels, want) || !slices.Equal(m.Classes, []string{"0", "1"}) {
		t.Errorf("labels %v classes %v, want %v of [0 1]", m.Labels, m.Classes, want)
	}
	_, err = Load(Spec{Path: path, Label: "label", Classes: []string{"cat", "dog"}}, Shard{})
	if err == nil || !strings.Contains(err.Error(), `label "0" is not one of the training data's classes "cat", "dog"`) {
		t.Errorf("numeric labels against classes cat, dog: got %v, want the label named", err)
	}
}
