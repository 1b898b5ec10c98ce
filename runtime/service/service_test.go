package service_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/service"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// models is the runtime's model folder fixture: iris (multi:softprob, 3 classes, 4 features)
// and binary (binary:logistic).
const models = "../testdata/models"

// irisRows are two iris flowers, a setosa and a virginica.
var irisRows = []float32{5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3}

func newService(t *testing.T, batching batcher.Options, lim infer.Limits) *service.Service {
	t.Helper()
	m := metrics.New()
	r, err := registry.Open(models, "unused", "", registry.Options{NewPredictor: service.NewPredictor(m, batching)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range r.Names() {
			_ = r.Unload(n)
		}
	})
	return &service.Service{Registry: r, Metrics: m, Limits: lim}
}

// jsonCall asks for outputs of rows of iris features sent as a V2 JSON tensor.
func jsonCall(rows []float32, outputs ...string) *infer.Call {
	text := make([]string, len(rows))
	for i, v := range rows {
		text[i] = strconv.FormatFloat(float64(v), 'g', -1, 32)
	}
	c := &infer.Call{ID: "1", Inputs: []infer.Input{{
		Name: infer.InputName, Datatype: "FP32", Shape: []int64{int64(len(rows) / 4), 4},
		Data: v2.JSONData("[" + strings.Join(text, ",") + "]"),
	}}}
	for _, o := range outputs {
		c.Outputs = append(c.Outputs, infer.OutputRequest{Name: o})
	}
	return c
}

// metric reads one sample from the metrics endpoint, as a scraper sees it (0 when absent).
func metric(t *testing.T, m *metrics.Metrics, sample string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// TestInferIsTheEvaluatorsAnswer: a call decoded and run through the service returns, for each
// output asked, what the model's evaluator computes for the same rows, shaped as XGBoost does.
func TestInferIsTheEvaluatorsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		batching batcher.Options
	}{
		{"direct", batcher.Options{}},
		{"batched", batcher.Options{MaxBatchRows: 64, MaxDelay: time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t, tc.batching, infer.Limits{})
			m, l, err := s.Acquire("iris", "")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if m.Name != "iris" {
				t.Fatalf("model %q", m.Name)
			}
			outs, err := s.Infer(context.Background(), l, jsonCall(irisRows, infer.OutputProba, infer.OutputPredict), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]struct {
				kind     forest.OutputKind
				datatype string
				shape    []int64
			}{
				infer.OutputProba:   {forest.OutputProba, "FP32", []int64{2, 3}},
				infer.OutputPredict: {forest.OutputLabel, "INT64", []int64{2}},
			}
			for _, o := range outs {
				w := want[o.Name]
				vals, err := l.Forest.Predict(nil, irisRows, 2, w.kind)
				if err != nil {
					t.Fatal(err)
				}
				if o.Datatype != w.datatype || fmt.Sprint(o.Shape) != fmt.Sprint(w.shape) || fmt.Sprint(o.Values) != fmt.Sprint(vals) {
					t.Errorf("%s: %s %v %v, want %s %v %v", o.Name, o.Datatype, o.Shape, o.Values, w.datatype, w.shape, vals)
				}
			}
			if p := outs[1].Values; len(p) != 2 || p[0] != 0 || p[1] != 2 {
				t.Errorf("labels %v, want setosa (0) and virginica (2)", p)
			}
			// Each output is one evaluation of both rows.
			if got := metric(t, s.Metrics, "gangboost_batch_rows_sum"); got != 4 {
				t.Errorf("gangboost_batch_rows_sum %v, want 4", got)
			}
		})
	}
}

// TestBatchedRequestsEachGetTheirOwnRows: requests merged by the batcher are answered with
// their own rows' values, and every row is evaluated once.
func TestBatchedRequestsEachGetTheirOwnRows(t *testing.T) {
	s := newService(t, batcher.Options{MaxBatchRows: 32, MaxDelay: 2 * time.Millisecond}, infer.Limits{})
	const requests = 40
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := irisRows[4*(i%2) : 4*(i%2)+4]
			_, l, err := s.Acquire("iris", "")
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Release()
			outs, err := s.Infer(context.Background(), l, jsonCall(row, infer.OutputPredict), nil)
			if err != nil {
				t.Error(err)
				return
			}
			if got := outs[0].Values; len(got) != 1 || got[0] != float32(2*(i%2)) {
				t.Errorf("request %d: label %v, want %d", i, got, 2*(i%2))
			}
		}()
	}
	wg.Wait()
	if got := metric(t, s.Metrics, "gangboost_batch_rows_sum"); got != requests {
		t.Errorf("%v rows evaluated for %d one-row requests", got, requests)
	}
}

func TestInferRefusals(t *testing.T) {
	s := newService(t, batcher.Options{}, infer.Limits{MaxRows: 1})
	_, l, err := s.Acquire("iris", "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, tc := range []struct {
		name string
		call *infer.Call
		kind v2.Kind
		want string
	}{
		{"over --max_batch_rows", jsonCall(irisRows), v2.KindTooLarge, "request has 2 rows; this server accepts at most 1 per request (--max_batch_rows)"},
		{"unknown output", jsonCall(irisRows[:4], "probabilities"), v2.KindInvalidInput, "probabilities"},
		{"wrong width", &infer.Call{Inputs: []infer.Input{{Name: "x", Datatype: "FP32", Shape: []int64{1, 3}, Data: v2.JSONData("[1,2,3]")}}},
			v2.KindInvalidInput, "input x: shape [1 3] has 3 features per row; the model expects 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Infer(context.Background(), l, tc.call, nil)
			if v2.KindOf(err) != tc.kind || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Fatalf("error %v (kind %v), want kind %v containing %q", err, v2.KindOf(err), tc.kind, tc.want)
			}
		})
	}
}

func TestAcquire(t *testing.T) {
	s := newService(t, batcher.Options{}, infer.Limits{})
	if _, _, err := s.Acquire("nope", ""); v2.KindOf(err) != v2.KindModelNotFound || !strings.Contains(err.Error(), "[binary iris]") {
		t.Errorf("unknown model: %v, want model-not-found listing the models", err)
	}
	if err := s.Registry.Unload("binary"); err != nil {
		t.Fatal(err)
	}
	m, l, err := s.Acquire("binary", "")
	if m == nil || l != nil || v2.KindOf(err) != v2.KindNotReady {
		t.Errorf("unloaded model: model %v, version %v, error %v; want the model, no version, not ready", m, l, err)
	}
}

// TestModelLabel: only names this server has become metric labels, so requests naming unknown
// models cannot grow the metrics.
func TestModelLabel(t *testing.T) {
	s := newService(t, batcher.Options{}, infer.Limits{})
	for name, want := range map[string]string{"iris": "iris", "binary": "binary", "nope": "", "": ""} {
		if got := s.ModelLabel(name); got != want {
			t.Errorf("ModelLabel(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestReleasedVersionStopsItsBatcher: the batcher of a replaced version stops when the version's
// last request is done; calls through it after that are still answered (directly).
func TestReleasedVersionStopsItsBatcher(t *testing.T) {
	s := newService(t, batcher.Options{MaxBatchRows: 16}, infer.Limits{})
	_, old, err := s.Acquire("iris", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := old.Predictor.(*batcher.Batcher); !ok {
		t.Fatalf("predictor %T, want the batcher", old.Predictor)
	}
	if err := s.Registry.Load("iris"); err != nil {
		t.Fatal(err)
	}
	// The batcher runs loops per output kind (one per core); Close, run by the last Release, returns once
	// each loop has said it is done, a moment before its goroutine ends: the count is waited for
	// (the deadline only guards against a hang).
	before := runtime.NumGoroutine()
	old.Release()
	for deadline := time.Now().Add(10 * time.Second); before-runtime.NumGoroutine() < 6 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if stopped := before - runtime.NumGoroutine(); stopped < 6 {
		t.Fatalf("%d goroutines ended when the replaced version was released, want its batcher's 6", stopped)
	}
	got, err := old.Predictor.PredictContext(context.Background(), nil, irisRows[:4], 1, forest.OutputLabel)
	if err != nil || len(got) != 1 || got[0] != 0 {
		t.Fatalf("call after the batcher stopped: %v %v", got, err)
	}
}

// With MinRowCost, a version is batched only when its one-row evaluation takes that long: the
// Iris model's takes well under an hour, and far more than nothing.
func TestMinRowCostChoosesBatchingByTheModel(t *testing.T) {
	for _, c := range []struct {
		min     time.Duration
		batched bool
	}{{time.Nanosecond, true}, {time.Hour, false}} {
		s := newService(t, batcher.Options{MaxBatchRows: 16, MinRowCost: c.min}, infer.Limits{})
		_, l, err := s.Acquire("iris", "")
		if err != nil {
			t.Fatal(err)
		}
		if ok := service.Batched(l); ok != c.batched {
			t.Errorf("MinRowCost %v: predictor %T, batched %v; want batched %v", c.min, l.Predictor, ok, c.batched)
		}
		l.Release()
	}
}
