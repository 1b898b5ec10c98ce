package train

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/gangenv"
)

// benchData is a synthetic regression problem with missing cells, the same for both peers.
func benchData(rows, cols int) *dataset.Matrix {
	r := rand.New(rand.NewSource(7))
	m := &dataset.Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols), Labels: make([]float32, rows)}
	for i := 0; i < rows; i++ {
		var y float64
		for j := 0; j < cols; j++ {
			v := r.NormFloat64()
			y += v * float64(j%5-2)
			if r.Intn(50) == 0 {
				v = math.NaN()
			}
			m.Data[i*cols+j] = float32(v)
		}
		m.Labels[i] = float32(y + 0.1*r.NormFloat64())
	}
	return m
}

// benchShape is one data set size the trainers are compared on.
type benchShape struct{ rows, cols, rounds int }

// benchShapes: a small problem, where fixed costs show, and the load benchmark's HIGGS-like 1M x 28
// (test/loadbench) boosted 100 rounds, where the rounds dominate.
var benchShapes = []benchShape{{50000, 20, 50}, {1000000, 28, 100}}

func benchParams(rounds, nthread int) Params {
	p := DefaultParams()
	p.NumRound = rounds
	p.NThread = nthread
	return p
}

// pythonTrain is the peer users run today: python3-xgboost (the same libxgboost) training the same
// matrix with the same parameters; it reports the seconds spent in DMatrix + xgb.train.
const pythonTrain = `
import sys, time, numpy as np, xgboost as xgb
rows, cols, rounds, path, nthread = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
raw = np.fromfile(path, dtype="<f4")
X = raw[: rows * cols].reshape(rows, cols)
y = raw[rows * cols :]
t = time.perf_counter()
d = xgb.DMatrix(X, label=y, missing=np.nan, nthread=nthread)
params = {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.3, "tree_method": "hist", "nthread": nthread, "seed": 0}
xgb.train(params, d, rounds, evals=[(d, "train")], verbose_eval=False)
print(time.perf_counter() - t)
`

// BenchmarkTrain compares the Go trainer with python3-xgboost on the same data and parameters.
// Each iteration trains once with each peer, in alternating order, so that the background load
// of a shared machine falls on both alike; it reports each peer's mean and the median of the
// per-iteration ratios (gangboost / python; below 1 is faster). Both time matrix construction
// plus the boosting rounds with a train-set evaluation each round. Run with -benchtime 5x or more
// (-bench 'Train/rows=50000' for the small shape alone: the large one takes minutes an iteration).
func BenchmarkTrain(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(fmt.Sprintf("rows=%d/cols=%d/rounds=%d", shape.rows, shape.cols, shape.rounds), func(b *testing.B) {
			benchmarkTrain(b, shape)
		})
	}
}

func benchmarkTrain(b *testing.B, shape benchShape) {
	m := benchData(shape.rows, shape.cols)
	// Debian's interpreter, which python3-xgboost is installed for, whatever else is on PATH.
	const python = "/usr/bin/python3"
	path := filepath.Join(b.TempDir(), "data.f32")
	buf := make([]byte, 0, 4*(len(m.Data)+len(m.Labels)))
	for _, v := range append(append([]float32{}, m.Data...), m.Labels...) {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	// nthread=1 compares the compute alone; nthread=2 adds OpenMP's thread synchronisation, which
	// on a loaded machine depends on OMP_WAIT_POLICY as much as on the trainer.
	for _, nthread := range []int{1, 2} {
		b.Run(fmt.Sprintf("nthread=%d", nthread), func(b *testing.B) {
			job := Job{Params: benchParams(shape.rounds, nthread), ModelFormat: "json", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			runtime.LockOSThread() // as Run does: libxgboost keeps per-thread state
			defer runtime.UnlockOSThread()
			goTrain := func() float64 {
				start := time.Now()
				if _, _, _, err := boost(job, gangenv.Cluster{WorldSize: 1}, m, nil, job.Log); err != nil {
					b.Fatal(err)
				}
				return time.Since(start).Seconds()
			}
			pyTrain := func() float64 {
				out, err := exec.Command(python, "-c", pythonTrain, strconv.Itoa(shape.rows), strconv.Itoa(shape.cols),
					strconv.Itoa(shape.rounds), path, strconv.Itoa(nthread)).CombinedOutput()
				if err != nil {
					b.Fatalf("python3-xgboost: %v\n%s", err, out)
				}
				lines := strings.Fields(string(out))
				s, err := strconv.ParseFloat(lines[len(lines)-1], 64)
				if err != nil {
					b.Fatalf("python3-xgboost printed %q", out)
				}
				return s
			}
			var goTotal, pyTotal float64
			ratios := make([]float64, 0, b.N)
			for i := 0; i < b.N; i++ {
				var g, p float64
				if i%2 == 0 {
					g, p = goTrain(), pyTrain()
				} else {
					p, g = pyTrain(), goTrain()
				}
				goTotal, pyTotal = goTotal+g, pyTotal+p
				ratios = append(ratios, g/p)
			}
			sort.Float64s(ratios)
			b.ReportMetric(goTotal/float64(b.N), "gangboost-s")
			b.ReportMetric(pyTotal/float64(b.N), "python-s")
			b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
		})
	}
}
