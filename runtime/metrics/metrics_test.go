package metrics

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// gather returns the runtime's own families by name, as the registry hands them to a scrape.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// labels renders a sample's labels as name=value pairs, sorted.
func labels(s *dto.Metric) string {
	var l []string
	for _, p := range s.GetLabel() {
		l = append(l, p.GetName()+"="+p.GetValue())
	}
	sort.Strings(l)
	return strings.Join(l, ",")
}

// Requests whose labels change from one to the next each land in their own series (the
// last series a request went to is remembered, and must never take another's).
func TestObserveRequestAlternatingLabels(t *testing.T) {
	m := New()
	keys := [][3]string{{"iris", "v2", "200"}, {"iris", "v2", "400"}, {"wine", "v2", "200"}, {"iris", "grpc", "200"}}
	for i := range 10 {
		for j, k := range keys {
			if j <= i%len(keys) {
				m.ObserveRequest(k[0], k[1], k[2], time.Millisecond)
			}
		}
	}
	checkRequestCounts(t, gather(t, m), map[string]float64{
		"model=iris,protocol=v2,status=200":   10,
		"model=iris,protocol=v2,status=400":   7,
		"model=wine,protocol=v2,status=200":   4,
		"model=iris,protocol=grpc,status=200": 2,
	})
}

// checkRequestCounts compares the request counters gathered in fams, by their labels, with want.
func checkRequestCounts(t *testing.T, fams map[string]*dto.MetricFamily, want map[string]float64) {
	t.Helper()
	counts := map[string]float64{}
	for _, s := range fams["gangboost_requests_total"].GetMetric() {
		counts[labels(s)] = s.GetCounter().GetValue()
	}
	if len(counts) != len(want) {
		t.Fatalf("request counters %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("requests{%s} = %v, want %v", k, counts[k], v)
		}
	}
}

func TestObserveRequest(t *testing.T) {
	m := New()
	m.ObserveRequest("iris", "rest-v2", "200", 300*time.Microsecond)
	m.ObserveRequest("iris", "rest-v2", "200", 2*time.Millisecond)
	m.ObserveRequest("", "grpc-v2", "NotFound", time.Millisecond)
	fams := gather(t, m)
	checkRequestCounts(t, fams, map[string]float64{
		"model=iris,protocol=rest-v2,status=200":  2,
		"model=,protocol=grpc-v2,status=NotFound": 1,
	})

	for _, s := range fams["gangboost_request_duration_seconds"].GetMetric() {
		if labels(s) != "model=iris,protocol=rest-v2,status=200" {
			continue
		}
		h := s.GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != 0.0023 {
			t.Errorf("latency count %d sum %v, want 2 and 0.0023", h.GetSampleCount(), h.GetSampleSum())
		}
		// 300µs falls in the 500µs bucket, 2ms in the 2.5ms one.
		for _, b := range h.GetBucket() {
			var want uint64
			switch {
			case b.GetUpperBound() >= 2.5e-3:
				want = 2
			case b.GetUpperBound() >= 500e-6:
				want = 1
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("latency bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	}
}

func TestObserveLoadAndBatch(t *testing.T) {
	m := New()
	m.ObserveLoad("iris", nil)
	m.ObserveLoad("iris", errors.New("load model model.json: unexpected end of input"))
	m.ObserveLoad("iris", nil)
	for _, n := range []int{1, 3, 1000} {
		m.ObserveBatch(n)
	}
	fams := gather(t, m)
	loads := map[string]float64{}
	for _, s := range fams["gangboost_model_loads_total"].GetMetric() {
		loads[labels(s)] = s.GetCounter().GetValue()
	}
	if loads["model=iris,result=ok"] != 2 || loads["model=iris,result=failed"] != 1 || len(loads) != 2 {
		t.Errorf("loads %v, want 2 ok and 1 failed", loads)
	}
	h := fams["gangboost_batch_rows"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 1004 {
		t.Errorf("batch rows count %d sum %v, want 3 and 1004", h.GetSampleCount(), h.GetSampleSum())
	}
	// The Go and process collectors are registered beside the runtime's own.
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s not gathered", name)
		}
	}
}

// TestHandlerContentType: a scraper that asks for nothing in particular gets the classic text
// format under its classic content type; one that asks for OpenMetrics gets it.
func TestHandlerContentType(t *testing.T) {
	m := New()
	m.ObserveRequest("iris", "rest-v2", "200", time.Millisecond)
	for _, tc := range []struct {
		accept, contentType, body string
		exact                     bool // the content type in full: no escaping= older scrapers cannot parse
	}{
		{"", "text/plain; version=0.0.4; charset=utf-8", `gangboost_requests_total{model="iris",protocol="rest-v2",status="200"} 1`, true},
		{"text/plain", "text/plain; version=0.0.4; charset=utf-8", `gangboost_requests_total{model="iris",protocol="rest-v2",status="200"} 1`, true},
		{"application/openmetrics-text; version=1.0.0", "application/openmetrics-text; version=1.0.0; charset=utf-8", "# EOF", false},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Type"); got != tc.contentType && (tc.exact || !strings.HasPrefix(got, tc.contentType)) {
			t.Errorf("Accept %q: Content-Type %q, want %q", tc.accept, got, tc.contentType)
		}
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("Accept %q: %d, body without %q", tc.accept, rec.Code, tc.body)
		}
	}
}

// TestHistogramCountsEveryObservation: observations from many goroutines at once, on whatever
// stripes, all land: the count, the sum and every bucket (a value equal to a bound is in that
// bound's bucket, as Prometheus' le says) are what one goroutine would have recorded. With one
// core the histogram has one stripe and takes no token; with four, four stripes.
func TestHistogramCountsEveryObservation(t *testing.T) {
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			before := runtime.GOMAXPROCS(procs)
			h := newHistogram(latencyBounds, 1e9)
			runtime.GOMAXPROCS(before)
			if len(h.stripes) != procs {
				t.Fatalf("%d stripes with GOMAXPROCS %d", len(h.stripes), procs)
			}
			countsEveryObservation(t, h)
		})
	}
}

func countsEveryObservation(t *testing.T, h *histogram) {
	values := []uint64{0, 24_999, 25_000, 25_001, 300_000, 999_999_999, 1_000_000_000, 1_000_000_001, 5_000_000_000}
	const goroutines, rounds = 8, 5000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				for _, v := range values {
					h.observe(v)
				}
			}
		}()
	}
	wg.Wait()
	count, sum, buckets := h.snapshot()
	var total uint64
	for _, v := range values {
		total += v
	}
	n := uint64(goroutines * rounds)
	if count != n*uint64(len(values)) || sum != float64(n*total)/1e9 {
		t.Fatalf("count %d sum %v, want %d and %v", count, sum, n*uint64(len(values)), float64(n*total)/1e9)
	}
	for le, got := range buckets {
		var want uint64
		for _, v := range values {
			if float64(v)/1e9 <= le {
				want += n
			}
		}
		if got != want {
			t.Errorf("bucket le=%v: %d, want %d", le, got, want)
		}
	}
}
