package dataset

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// loadBoth reads data as before the fast path and the parallel read existed (sequentially, field
// by field) and in parallel with the given block size and workers, from a reader that can be
// opened again.
func loadBoth(t testing.TB, data string, o csvOptions, block, workers int) (seq, par *Matrix, seqErr, parErr error, opens int) {
	t.Helper()
	defer func(b int, min int64) { csvBlockBytes, csvParallelMinBytes = b, min }(csvBlockBytes, csvParallelMinBytes)
	csvBlockBytes, csvParallelMinBytes = block, 0
	slow := o
	slow.slowOnly = true
	seq, seqErr = loadCSVReader(strings.NewReader(data), "x.csv", slow, Shard{})
	o.sizeHint = int64(len(data))
	open := func() (io.ReadCloser, error) {
		opens++
		return io.NopCloser(strings.NewReader(data)), nil
	}
	o.workers = workers
	var progress atomic.Int64
	o.rows = &progress
	par, parErr = loadCSVOpenWorkers(open, "x.csv", o)
	if parErr == nil && progress.Load() != int64(par.Rows) {
		t.Fatalf("the progress counted %d rows of %d", progress.Load(), par.Rows)
	}
	return seq, par, seqErr, parErr, opens
}

// loadCSVOpenWorkers is loadCSVOpen with o.workers workers whatever GOMAXPROCS is.
func loadCSVOpenWorkers(open func() (io.ReadCloser, error), file string, o csvOptions) (*Matrix, error) {
	rc, _ := open()
	m, err := loadCSVReader(rc, file, o, Shard{})
	if err == errSequential {
		rc, _ = open()
		o.workers = 0
		m, err = loadCSVReader(rc, file, o, Shard{})
	}
	return m, err
}

// checkParallel requires the parallel read of data to give exactly the sequential result, the
// same error included, for block sizes that put block ends everywhere and for 2 and 3 workers;
// it returns how often the input was opened (2: read again sequentially).
func checkParallel(t *testing.T, data string, o csvOptions) (opens int) {
	t.Helper()
	for _, block := range []int{1, 7, 64, 1 << 16} {
		for _, workers := range []int{2, 3} {
			seq, par, seqErr, parErr, n := loadBoth(t, data, o, block, workers)
			opens = max(opens, n)
			switch {
			case (seqErr == nil) != (parErr == nil):
				t.Fatalf("block %d, %d workers: error %v, sequential: %v", block, workers, parErr, seqErr)
			case seqErr != nil && seqErr.Error() != parErr.Error():
				t.Fatalf("block %d, %d workers:\n got %v\nwant %v", block, workers, parErr, seqErr)
			case seqErr == nil:
				if d := sameMatrix(seq, par); d != "" {
					t.Fatalf("block %d, %d workers: %s", block, workers, d)
				}
			}
		}
	}
	return opens
}

func TestParallelCSVIsTheSequentialRead(t *testing.T) {
	var numbered strings.Builder
	numbered.WriteString("id,x,label\n")
	for i := range 500 {
		fmt.Fprintf(&numbered, "%d,%g,%d\n", i, float64(i)*0.37-50, i%2)
	}
	long := strings.Repeat("1", 300)
	tests := []struct {
		name  string
		data  string
		o     csvOptions
		again bool // read again sequentially
	}{
		{name: "every line once and in order", data: numbered.String()},
		{name: "empty lines and CRLF", data: "a,b,label\r\n1,2,0\r\n\r\n\n3,,1\n\n4,5.5e3,0\n\n"},
		{name: "no final newline", data: "a,label\n1,0\n2,1"},
		{name: "final lone CR", data: "a,label\n1,0\n2,1\r"},
		{name: "quoted and odd cells", data: "\"a\",b,label\n\"1\", 2 ,0\nNA,n/a,1\n12345678901234567,-0,0\n\"3\"\"\",4,1\n"},
		{name: "features chosen and reordered", data: numbered.String(), o: csvOptions{features: []string{"x", "id"}}},
		{name: "text classes", data: "x,label\n1,cat\n2,dog\n3,ant\n4,cat\n5,eel\n6,dog\n7,bee\n"},
		{name: "given classes", data: "x,label\n1,cat\n2,dog\n3,ant\n", o: csvOptions{classes: []string{"dog", "cat", "ant", "cow"}}},
		{name: "long lines", data: "x,label\n" + long + ",1\n1," + long + "\n" + long + ".5,0\n"},
		{name: "a quoted field over lines", data: "x,label\n1,\"a\nb\"\n2,c\n3,\"d\ne\"\n", again: true},
		{name: "numbers before text", data: "x,label\n1,1\n2,1\n3,1\n4,cat\n5,2\n6,1.0\n", again: true},
		{name: "bad cell", data: numbered.String() + "1,x,0\n2,3,0\n"},
		{name: "ragged row", data: numbered.String()[:2000] + "1,2\n" + numbered.String()[2000:]},
		{name: "bare quote", data: "x,label\n1,0\n2,a\"b\n3,1\n"},
		{name: "never closed", data: "x,label\n1,0\n2,\"ab\n", again: true},
		{name: "label missing", data: "x,label\n1,0\n2,\n3,NA\n"},
		{name: "unknown class", data: "x,label\n1,cat\n2,cow\n", o: csvOptions{classes: []string{"cat"}}},
		{name: "line too long", data: "x,label\n1,0\n" + long + ",1\n2,0\n", o: csvOptions{limits: Limits{MaxLineBytes: 100}}},
		{name: "matrix bound", data: numbered.String(), o: csvOptions{limits: Limits{MaxMatrixBytes: 100 * 2 * 4}}, again: true},
		{name: "header only", data: "x,label\n\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.label = "label"
			if opens := checkParallel(t, tt.data, tt.o); (opens == 2) != tt.again {
				t.Errorf("the input was opened %d times", opens)
			}
		})
	}
}

// An error in any block is the one the sequential read reports: the first in the file, with its
// line and column.
func TestParallelCSVErrorsNameTheirLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "%d,%d.25,%d\n", i, i, i%3)
	}
	good := b.String()
	lines := strings.SplitAfter(good, "\n")
	for _, bad := range []int{2, 700, 1500, 2001} {
		for _, second := range []int{0, bad + 3, bad + 900} {
			ls := slices.Clone(lines)
			ls[bad-1] = "1,oops,0\n"
			if second > 0 && second <= 2001 {
				ls[second-1] = "1,2\n"
			}
			data := strings.Join(ls, "")
			checkParallel(t, data, csvOptions{label: "label"})
			_, par, _, err, _ := loadBoth(t, data, csvOptions{label: "label"}, 4096, 2)
			want := fmt.Sprintf(`x.csv:%d: column 2 "b": "oops" is not a number`, bad)
			if par != nil || err == nil || err.Error() != want {
				t.Fatalf("bad line %d: error %v, want %s", bad, err, want)
			}
		}
	}
}

// Class names seen by different workers are merged into one sorted list.
func TestParallelCSVMergesClasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"zebra", "ant", "moth", "cat", "eel"}
	var b strings.Builder
	b.WriteString("x,label\n")
	var want []float32
	for i := range 3000 {
		k := rng.IntN(len(names))
		if i > 2000 {
			k = 0 // only the last blocks see zebra... and the first ones too
		}
		fmt.Fprintf(&b, "%d,%s\n", i, names[k])
		want = append(want, float32(map[string]int{"ant": 0, "cat": 1, "eel": 2, "moth": 3, "zebra": 4}[names[k]]))
	}
	checkParallel(t, b.String(), csvOptions{label: "label"})
	_, m, _, err, opens := loadBoth(t, b.String(), csvOptions{label: "label"}, 512, 3)
	if err != nil || opens != 1 {
		t.Fatalf("err %v, opened %d times", err, opens)
	}
	if !slices.Equal(m.Classes, []string{"ant", "cat", "eel", "moth", "zebra"}) || !slices.Equal(m.Labels, want) {
		t.Fatalf("classes %q; labels differ: %v", m.Classes, !slices.Equal(m.Labels, want))
	}
}

// More distinct text labels than maxClasses: the message names the first text label, as the
// sequential read does.
func TestParallelCSVTooManyClasses(t *testing.T) {
	var b strings.Builder
	b.WriteString("x,label\n")
	for i := range maxClasses + 5 {
		fmt.Fprintf(&b, "%d,c%d\n", i, i)
	}
	checkParallel(t, b.String(), csvOptions{label: "label"})
}

// A local file from csvParallelMinBytes on, a whole part and a byte range of a split are read in
// parallel, with the sequential read's rows and facts.
func TestLoadReadsLargeCSVInParallel(t *testing.T) {
	defer func(b int, min int64) { csvBlockBytes, csvParallelMinBytes = b, min }(csvBlockBytes, csvParallelMinBytes)
	csvBlockBytes, csvParallelMinBytes = 4096, 1
	var b strings.Builder
	b.WriteString("a,label,b\n")
	const n = 30000
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d.5\n", i, i%3, i*7)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "train.csv")
	writeFile(t, path, []byte(b.String()))
	for _, spec := range []Spec{{Path: path, Label: "label", SplitFileBytes: 1}, {Path: dir, Label: "label"}} {
		for _, world := range []int{1, 3} {
			var all []int
			for r := range world {
				m, err := Load(spec, Shard{r, world})
				if err != nil {
					t.Fatal(err)
				}
				for i := range m.Rows {
					all = append(all, int(m.Row(i)[0]))
					if m.Labels[i] != float32(int(m.Row(i)[0])%3) {
						t.Fatalf("%s world %d: row %d has label %v", spec.Path, world, i, m.Labels[i])
					}
				}
			}
			if len(all) != n {
				t.Fatalf("%s world %d: %d rows, want %d", spec.Path, world, len(all), n)
			}
			for i, g := range all {
				if g != i {
					t.Fatalf("%s world %d: row %d is %d: want every line once, in order", spec.Path, world, i, g)
				}
			}
		}
	}
	bad := strings.Replace(b.String(), "\n20000,", "\n20000x,", 1)
	writeFile(t, path, []byte(bad))
	if _, err := Load(Spec{Path: path, Label: "label"}, Shard{}); err == nil || err.Error() != path+`:20002: column 1 "a": "20000x" is not a number` {
		t.Fatalf("error %v", err)
	}
}

func FuzzParallelCSV(f *testing.F) {
	for _, name := range []string{"flowers.csv", "ragged.csv", "bad_quote.csv", "mixed_labels.csv"} {
		raw, _ := os.ReadFile(td(name))
		f.Add(raw, uint8(7))
	}
	f.Add([]byte("a,label\n1,0\n\n2.5e3,\"1\"\n,x\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, block uint8) {
		for _, label := range []string{"label", "species"} {
			seq, par, seqErr, parErr, _ := loadBoth(t, string(data), csvOptions{label: label}, 1+int(block), 2)
			switch {
			case (seqErr == nil) != (parErr == nil) || (seqErr != nil && seqErr.Error() != parErr.Error()):
				t.Fatalf("error %v, sequential: %v", parErr, seqErr)
			case seqErr == nil:
				if d := sameMatrix(seq, par); d != "" {
					t.Fatal(d)
				}
			}
		}
	})
}
