package forest

import (
	"context"
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"testing"
)

// TestPredictContextStopsWhenDone: a done context stops evaluation between blocks and
// leaves dst as it was; a live one gives exactly what Predict gives on one core, across
// block edges and split across cores.
func TestPredictContextStopsWhenDone(t *testing.T) {
	m, err := Load("testdata/seed_dart_multi.json")
	if err != nil {
		t.Fatal(err)
	}
	nf := m.NumFeatures()
	const nrows = 3000 // several margin blocks and many SHAP blocks
	rng := rand.New(rand.NewSource(1))
	rows := make([]float32, nrows*nf)
	for i := range rows {
		rows[i] = rng.Float32()*4 - 2
	}
	// Batches this large are split across cores; the serial result is the reference.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, kind := range []OutputKind{OutputDefault, OutputMargin, OutputLeaf, OutputContribs} {
		if nrows/m.minRowsPerWorker(kind) < 2 {
			t.Fatalf("%v: %d rows are not split across cores", kind, nrows)
		}
		runtime.GOMAXPROCS(1)
		want, err := m.Predict(nil, rows, nrows, kind)
		runtime.GOMAXPROCS(2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.PredictContext(context.Background(), []float32{7}, rows, nrows, kind)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want)+1 || got[0] != 7 {
			t.Fatalf("%v: got %d values, want 1+%d", kind, len(got), len(want))
		}
		for i := range want {
			if got[i+1] != want[i] && !(got[i+1] != got[i+1] && want[i] != want[i]) {
				t.Fatalf("%v: value %d = %v, Predict gives %v", kind, i, got[i+1], want[i])
			}
		}

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dst := []float32{7}
		got, err = m.PredictContext(ctx, dst, rows, nrows, kind)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%v: cancelled context: err = %v, want context.Canceled", kind, err)
		}
		if len(got) != 1 || got[0] != 7 {
			t.Fatalf("%v: cancelled context changed dst to %d values", kind, len(got))
		}
	}
}

// TestConcurrentSplitBatches: calls split across cores at the same time (sharing the
// scratch and job pools) each get the one-core result.
func TestConcurrentSplitBatches(t *testing.T) {
	m, err := Load("testdata/seed_dart_multi.json")
	if err != nil {
		t.Fatal(err)
	}
	nf := m.NumFeatures()
	const nrows = 2000
	rng := rand.New(rand.NewSource(2))
	rows := make([]float32, nrows*nf)
	for i := range rows {
		rows[i] = rng.Float32()*4 - 2
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	want, _ := m.Predict(nil, rows, nrows, OutputMargin)
	runtime.GOMAXPROCS(4)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			var dst []float32
			for i := 0; i < 20; i++ {
				dst, _ = m.Predict(dst[:0], rows, nrows, OutputMargin)
				for k := range want {
					if dst[k] != want[k] {
						t.Errorf("value %d: %v, one core gives %v", k, dst[k], want[k])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
