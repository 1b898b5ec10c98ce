package dataset

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

var (
	benchOnce sync.Once
	benchCSV  string
	benchSVM  string
	benchDir  string
)

// benchFiles writes a 100 MB CSV (8 features, string class label, some missing cells) and a
// LibSVM file of the same rows once per test binary.
func benchFiles(b *testing.B) (csvPath, svmPath string) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dataset-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		benchCSV, benchSVM = filepath.Join(dir, "bench.csv"), filepath.Join(dir, "bench.libsvm")
		fc, _ := os.Create(benchCSV)
		fs, _ := os.Create(benchSVM)
		wc, ws := bufio.NewWriter(fc), bufio.NewWriter(fs)
		rng := rand.New(rand.NewPCG(1, 2))
		fmt.Fprintln(wc, "f0,f1,f2,f3,f4,f5,f6,f7,class")
		classes := []string{"alpha", "beta", "gamma"}
		written := 0
		for written < 100<<20 {
			c := rng.IntN(3)
			fmt.Fprint(ws, c)
			for j := 0; j < 8; j++ {
				if rng.IntN(50) == 0 {
					wc.WriteString(",")
					continue
				}
				v := rng.NormFloat64()*10 + float64(c)
				n, _ := fmt.Fprintf(wc, "%.4f,", v)
				written += n
				fmt.Fprintf(ws, " %d:%.4f", j, v)
			}
			n, _ := fmt.Fprintln(wc, classes[c])
			written += n
			fmt.Fprintln(ws)
		}
		wc.Flush()
		ws.Flush()
		fc.Close()
		fs.Close()
	})
	if benchCSV == "" {
		b.Fatal("bench files not written")
	}
	return benchCSV, benchSVM
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// BenchmarkLoadCSV100MB reads and validates a 100 MB CSV; "rank0of1" keeps every row, parsed on
// GOMAXPROCS cores as Load does ("sequential": on one), "rank0of4" keeps a quarter (each rank
// still parses the whole file, on one core).
func BenchmarkLoadCSV100MB(b *testing.B) {
	path, _ := benchFiles(b)
	st, _ := os.Stat(path)
	b.Run("rank0of1", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := Load(Spec{Path: path, Label: "class"}, Shard{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, s := range []Shard{{0, 1}, {0, 4}} {
		name := fmt.Sprintf("rank%dof%d", s.Rank, s.World)
		if s.World == 1 {
			name += "/sequential"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := LoadCSV(path, "class", nil, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLoadLibSVM(b *testing.B) {
	_, path := benchFiles(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := LoadLibSVM(path, Shard{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitRecords compares splitting the 100 MB CSV into fields (no number parsing) with
// recordReader and with encoding/csv.
func BenchmarkSplitRecords(b *testing.B) {
	path, _ := benchFiles(b)
	st, _ := os.Stat(path)
	b.Run("recordReader", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			f, _ := os.Open(path)
			r := newRecordReader(f)
			for {
				if _, err := r.read(); err != nil {
					break
				}
			}
			f.Close()
		}
	})
	b.Run("encoding_csv", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			f, _ := os.Open(path)
			r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
			r.ReuseRecord, r.FieldsPerRecord = true, -1
			for {
				if _, err := r.Read(); err != nil {
					break
				}
			}
			f.Close()
		}
	})
}

// BenchmarkLoadParquet reads 3 Parquet parts of 100k rows (4 features, one with nulls) in row
// groups of 32k rows. beyond-matrix-B/op is what the load allocates besides the matrix and the
// labels it returns: the decoding's garbage and buffers, which add to a rank's peak memory.
func BenchmarkLoadParquet(b *testing.B) {
	dir := b.TempDir()
	const parts, perPart = 3, 100_000
	for p := range parts {
		writeFile(b, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", p)), parquetBytes(b, testRows(p*perPart, perPart), 32<<10))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var m *Matrix
	for b.Loop() {
		var err error
		if m, err = Load(Spec{Path: dir, Label: "label"}, Shard{}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	out := float64(len(m.Data)+len(m.Labels)) * 4
	b.SetBytes(int64(out))
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)-out, "beyond-matrix-B/op")
}

// BenchmarkCSVRows parses HIGGS-like rows (28 features written with 7 significant digits, a 0/1
// label) in memory: in one pass (fastRow) and field by field (splitting, then parseCell).
func BenchmarkCSVRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var text []byte
	for range 20000 {
		for range 28 {
			text = strconv.AppendFloat(text, rng.NormFloat64(), 'g', 7, 32)
			text = append(text, ',')
		}
		text = append(text, "1\n"...)
	}
	c := &csvColumns{header: make([]string, 29), labelCol: 28, role: make([]int, 29)}
	for j := range 28 {
		c.featCols, c.role[j] = append(c.featCols, j), j
	}
	c.role[28] = roleLabel
	row := make([]float32, 28)
	for _, slow := range []bool{false, true} {
		b.Run(map[bool]string{false: "fastRow", true: "field_by_field"}[slow], func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			cr := &recordReader{}
			for b.Loop() {
				cr.reset(text, 0)
				for {
					line, err := cr.nextLine()
					if err != nil {
						break
					}
					if _, _, err := c.row(cr, line, row, nil, slow); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkLoadSmallFile loads the 250-byte flowers.csv and the small LibSVM file, as the
// fuzz targets do thousands of times: the cost of a load that is not its rows (buffers).
func BenchmarkLoadSmallFile(b *testing.B) {
	for _, spec := range []Spec{{Path: td("flowers.csv"), Label: "species"}, {Path: td("small.libsvm")}} {
		b.Run(filepath.Ext(spec.Path)[1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(spec, Shard{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
