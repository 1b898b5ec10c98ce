package train

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/training/checkpoint"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/xgb"
)

// BenchmarkCheckpoint measures what a checkpoint costs rank 0 after 100 and 1000 rounds of depth-6
// trees on 20000 rows of 28 features: serialising the model (UBJSON) and writing it atomically
// (temporary file, fsync, rename, fsync of the folder). It reports the file's size, and the time
// a resumed gang spends reading it back and loading the model.
func BenchmarkCheckpoint(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := benchData(20000, 28)
	d, err := matrix(m, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Free()
	bst, err := xgb.NewBooster(d)
	if err != nil {
		b.Fatal(err)
	}
	defer bst.Free()
	p := DefaultParams()
	p.NThread = 1
	for _, kv := range p.Booster() {
		if err := bst.SetParam(kv[0], kv[1]); err != nil {
			b.Fatal(err)
		}
	}
	done := 0
	for _, rounds := range []int{100, 1000} {
		for ; done < rounds; done++ {
			if err := bst.UpdateOneIter(done, d); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("rounds=%d", rounds), func(b *testing.B) {
			w := &checkpointWriter{dir: checkpoint.Dir{Path: b.TempDir()}, settings: map[string]string{"x": "y"},
				log: discardLog(), now: time.Now}
			var size int
			for i := 0; i < b.N; i++ {
				model, err := bst.ModelBytes("ubj")
				if err != nil {
					b.Fatal(err)
				}
				st := &checkpoint.State{Round: rounds, Settings: w.settings, Fingerprint: checkpoint.Fingerprint(w.settings), Model: model}
				written, err := w.dir.Write(st)
				if err != nil {
					b.Fatal(err)
				}
				size = written.Bytes
			}
			b.ReportMetric(float64(size), "bytes")
			b.StopTimer()
			start := time.Now()
			found, err := w.dir.Latest()
			if err != nil || found.State == nil {
				b.Fatal(err)
			}
			loaded, err := xgb.LoadBoosterBytes(found.State.Model, d)
			if err != nil {
				b.Fatal(err)
			}
			loaded.Free()
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-to-load")
		})
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkDataDigest measures the digest of a rank's rows a checkpoint's settings hold, on a
// HIGGS-sized shard (1M rows x 28 features): what checkpointing adds to a gang's start.
func BenchmarkDataDigest(b *testing.B) {
	m := &dataset.Matrix{Rows: 1000000, Cols: 28, Data: make([]float32, 28000000), Labels: make([]float32, 1000000)}
	b.SetBytes(int64(len(m.Data)+len(m.Labels)) * 4)
	for i := 0; i < b.N; i++ {
		matrixDigest(m, nil)
	}
}
