package loadbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/test/s3server"
)

const (
	benchRows     = 1_000_000
	benchFeatures = 28
	parquetParts  = 6
)

// childEnv carries a rank's load to a child process of the benchmark binary.
const childEnv = "GANGBOOST_LOADBENCH_RANK"

// onlyEnv, when set, names the rows of the table to run: comma-separated parts of their names
// ("parquet", "csv s3", "pandas"). A change to one loader is then measured in a fraction of
// the run, on a shared machine where the whole table takes minutes.
const onlyEnv = "GANGBOOST_LOADBENCH_ONLY"

// selected reports whether the row named name is to run; pandas' row runs when "pandas" is named.
func selected(name string) bool {
	only := os.Getenv(onlyEnv)
	if only == "" {
		return true
	}
	for _, part := range strings.Split(only, ",") {
		if part = strings.TrimSpace(part); part != "" && strings.Contains(name, part) {
			return true
		}
	}
	return false
}

type childJob struct {
	Spec        dataset.Spec
	Rank, World int
}

// childResult is what a rank measured: load time (to the dense matrix), load + DMatrix time,
// and peak RSS after each.
type childResult struct {
	Rows                 int
	BytesRead            int64
	LoadSeconds, Seconds float64
	LoadRSS, RSS         int64 // bytes
	// BaseRSS is the process's peak before the load: the runtime and libxgboost's pages.
	BaseRSS int64
}

func TestMain(m *testing.M) {
	if js := os.Getenv(childEnv); js != "" {
		os.Exit(runChild(js))
	}
	os.Exit(m.Run())
}

// maxRSS is the process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux keeps that
// across exec, so a child of the benchmark (which holds the whole data set) would report the
// parent's peak.
func maxRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func runChild(js string) int {
	var job childJob
	if err := json.Unmarshal([]byte(js), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	base := maxRSS()
	start := time.Now()
	m, err := dataset.Load(job.Spec, dataset.Shard{Rank: job.Rank, World: job.World})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res := childResult{Rows: m.Rows, BytesRead: m.BytesRead, LoadSeconds: time.Since(start).Seconds(), LoadRSS: maxRSS(), BaseRSS: base}
	d, err := xgb.NewDMatrixDense(m.Data, m.Rows, m.Cols, float32(math.NaN()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := d.SetFloatInfo("label", m.Labels); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res.Seconds, res.RSS = time.Since(start).Seconds(), maxRSS()
	d.Free()
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// runGang loads spec on world concurrent processes and returns each rank's figures.
func runGang(b *testing.B, spec dataset.Spec, world int, env []string) []childResult {
	b.Helper()
	res := make([]childResult, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Go(func() {
			js, _ := json.Marshal(childJob{Spec: spec, Rank: r, World: world})
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(append(os.Environ(), env...), childEnv+"="+string(js))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %v\n%s", r, err, stderr.String())
				return
			}
			errs[r] = json.Unmarshal(out, &res[r])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return res
}

// writeData writes the CSV file and the Parquet part files of the synthetic data set.
func writeData(b *testing.B, dir string) (csvPath, parquetDir string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]higgsRow, benchRows)
	for i := range rows {
		v := reflectFeatures(&rows[i])
		s := 0.0
		for j := range v {
			*v[j] = float32(rng.NormFloat64())
			s += float64(*v[j]) * float64(j%3-1)
		}
		if s > 0 {
			rows[i].Label = 1
		}
	}
	csvPath = filepath.Join(dir, "higgs.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for j := range benchFeatures {
		fmt.Fprintf(w, "f%02d,", j)
	}
	w.WriteString("label\n")
	var line []byte
	for i := range rows {
		line = line[:0]
		for _, p := range reflectFeatures(&rows[i]) {
			line = strconv.AppendFloat(line, float64(*p), 'g', 7, 32)
			line = append(line, ',')
		}
		line = strconv.AppendFloat(line, float64(rows[i].Label), 'g', -1, 32)
		line = append(line, '\n')
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	parquetDir = filepath.Join(dir, "higgs-parquet")
	os.MkdirAll(parquetDir, 0o755)
	per := benchRows / parquetParts
	for p := range parquetParts {
		f, err := os.Create(filepath.Join(parquetDir, fmt.Sprintf("part-%05d.parquet", p)))
		if err != nil {
			b.Fatal(err)
		}
		pw := parquet.NewGenericWriter[higgsRow](f, parquet.MaxRowsPerRowGroup(64<<10), parquet.Compression(&parquet.Snappy))
		if _, err := pw.Write(rows[p*per : (p+1)*per]); err != nil {
			b.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return csvPath, parquetDir
}

func reflectFeatures(r *higgsRow) []*float32 {
	return []*float32{&r.F00, &r.F01, &r.F02, &r.F03, &r.F04, &r.F05, &r.F06, &r.F07, &r.F08, &r.F09,
		&r.F10, &r.F11, &r.F12, &r.F13, &r.F14, &r.F15, &r.F16, &r.F17, &r.F18, &r.F19,
		&r.F20, &r.F21, &r.F22, &r.F23, &r.F24, &r.F25, &r.F26, &r.F27}
}

// pandasScript loads the CSV file as a pandas user would and prints the same figures.
const pandasScript = `
import json, sys, time
import pandas as pd, xgboost as xgb
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
t0 = time.time()
df = pd.read_csv(sys.argv[1])
t1 = time.time()
rss1 = hwm()
d = xgb.DMatrix(df.drop(columns=["label"]), label=df["label"])
t2 = time.time()
rss2 = hwm()
print(json.dumps({"Rows": len(df), "LoadSeconds": t1 - t0, "Seconds": t2 - t0, "LoadRSS": rss1, "RSS": rss2}))
`

func runPandas(b *testing.B, csvPath string) childResult {
	// Debian's python3 holds the python3-pandas and python3-xgboost packages, whatever else
	// (pyenv, a virtualenv) comes first in PATH.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	out, err := exec.Command(py, "-c", pandasScript, csvPath).Output()
	if err != nil {
		b.Fatalf("pandas (apt-get install python3-pandas python3-xgboost): %v", err)
	}
	var r childResult
	if err := json.Unmarshal(bytes.TrimSpace(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]), &r); err != nil {
		b.Fatalf("pandas output %q: %v", out, err)
	}
	return r
}

// BenchmarkLoad runs every configuration once per iteration (use -benchtime 1x) and prints one
// table: per configuration and world size the slowest rank's load time, its ratio to pandas, the
// largest peak RSS of a rank against its shard's dense float32 matrix, and the bytes per rank.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	csvPath, parquetDir := writeData(b, dir)
	srv := s3server.Start(b)
	srv.MakeBucket(b, "bench")
	csvBytes, _ := os.ReadFile(csvPath)
	srv.Put(b, "bench", "higgs.csv", csvBytes)
	csvSize := int64(len(csvBytes))
	csvBytes = nil
	ents, _ := os.ReadDir(parquetDir)
	var parquetSize int64
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(parquetDir, e.Name()))
		parquetSize += int64(len(data))
		srv.Put(b, "bench", "higgs-parquet/"+e.Name(), data)
	}
	store := dataset.ObjectStore{Endpoint: srv.Endpoint, PathStyle: true}
	configs := []struct {
		name string
		spec dataset.Spec
		size int64
	}{
		{"csv file", dataset.Spec{Path: csvPath, Label: "label"}, csvSize},
		{"csv s3 object", dataset.Spec{Path: "s3://bench/higgs.csv", Label: "label", ObjectStore: store}, csvSize},
		{"parquet folder (6 parts)", dataset.Spec{Path: parquetDir, Label: "label"}, parquetSize},
		{"parquet s3 (6 parts)", dataset.Spec{Path: "s3://bench/higgs-parquet/", Label: "label", ObjectStore: store}, parquetSize},
	}
	for range b.N {
		var t strings.Builder
		fmt.Fprintf(&t, "\n%-26s %5s %9s %9s %8s %9s %8s %12s %8s\n", "load of 1M x 28 + label", "world", "load s", "+DMatrix", "vs pandas", "peak RSS", "/dense", "bytes/rank", "/data")
		dense := func(rows int) float64 { return float64(rows) * benchFeatures * 4 }
		var p childResult
		if selected("pandas") {
			p = runPandas(b, csvPath)
			fmt.Fprintf(&t, "%-26s %5d %9.2f %9.2f %8s %8.0fM %8.2f %12d %8.2f\n", "pandas.read_csv+DMatrix", 1, p.LoadSeconds, p.Seconds, "1.00x",
				float64(p.RSS)/1e6, float64(p.RSS)/dense(p.Rows), csvSize, 1.0)
		}
		for _, c := range configs {
			if !selected(c.name) {
				continue
			}
			for _, world := range []int{1, 3} {
				env := srv.Env()
				rs := runGang(b, c.spec, world, env)
				var slowLoad, slowAll float64
				var rss, loadRSS, bytesRead int64
				var rssRatio, loadRatio, ownRatio float64
				for _, r := range rs {
					ownRatio = max(ownRatio, float64(r.LoadRSS-r.BaseRSS)/dense(r.Rows))
					slowLoad, slowAll = max(slowLoad, r.LoadSeconds), max(slowAll, r.Seconds)
					rss, loadRSS, bytesRead = max(rss, r.RSS), max(loadRSS, r.LoadRSS), max(bytesRead, r.BytesRead)
					rssRatio, loadRatio = max(rssRatio, float64(r.RSS)/dense(r.Rows)), max(loadRatio, float64(r.LoadRSS)/dense(r.Rows))
				}
				if bytesRead == 0 {
					bytesRead = c.size // a single local file is read whole by each rank
				}
				vsPandas := "-"
				if p.Seconds > 0 {
					vsPandas = fmt.Sprintf("%.1fx", p.Seconds/slowAll)
					b.ReportMetric(p.Seconds/slowAll, strings.ReplaceAll(c.name, " ", "_")+fmt.Sprintf("_w%d_x_pandas", world))
				}
				fmt.Fprintf(&t, "%-26s %5d %9.2f %9.2f %8s %8.0fM %8.2f %12d %8.2f   load only: peak %.0fM = %.2f x dense, %.2f x above the process's start\n", c.name, world, slowLoad, slowAll,
					vsPandas, float64(rss)/1e6, rssRatio, bytesRead, float64(bytesRead)/float64(c.size), float64(loadRSS)/1e6, loadRatio, ownRatio)
			}
		}
		// On stdout: b.Log keeps only the first lines of a benchmark's log.
		fmt.Print(t.String())
	}
}
