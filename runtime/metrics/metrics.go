// Package metrics exposes the runtime's Prometheus metrics: requests by model, protocol and
// status, their latency, and the sizes of the batches the evaluator runs.
package metrics

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one runtime's collectors, in a registry of their own.
type Metrics struct {
	reg   *prometheus.Registry
	loads *prometheus.CounterVec

	// Every request adds to its series and every evaluation to batchRows, from every core:
	// these are histograms of this package (histogram.go) whose observation is two atomic
	// additions on a cache line of the caller's core, where client_golang's takes five or
	// six on lines all cores share (BenchmarkObserveRequest, a request's metrics: 89-98 ns
	// against client_golang's 141-147 on one core, 47-51 against 290-390 ns on two). A
	// scrape reads them through requestCollector.
	batchRows *histogram
	// series holds each label set's latency histogram (its count is the request counter).
	// The label sets are bounded (models this server has, protocols, statuses), and so is the
	// map. It is copied on write: a request reads it without a lock's shared writes.
	mu     sync.Mutex // serializes additions
	series atomic.Pointer[map[seriesKey]*series]
	// last is the series the latest request that missed it went to: under load nearly every
	// request has the same labels, and comparing them costs less than hashing them
	// (BenchmarkObserveRequest on one core of the 2-core VM: 22 ns, 29 with every request
	// looked up in the map).
	last atomic.Pointer[series]
}

type seriesKey struct{ model, protocol, status string }

// series is one label set's latency histogram.
type series struct {
	key seriesKey
	h   *histogram
}

// latencyBounds are the request latency buckets' upper bounds, in seconds.
var latencyBounds = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}

var (
	requestsDesc = prometheus.NewDesc("gangboost_requests_total", "Inference and metadata requests by model, protocol and status.",
		[]string{"model", "protocol", "status"}, nil)
	latencyDesc = prometheus.NewDesc("gangboost_request_duration_seconds", "Request latency by model, protocol and status.",
		[]string{"model", "protocol", "status"}, nil)
	batchRowsDesc = prometheus.NewDesc("gangboost_batch_rows", "Rows evaluated per model call (per request, or per merged batch when batching is on).",
		nil, nil)
)

// New registers the collectors, plus Go and process metrics.
func New() *Metrics {
	m := &Metrics{
		reg:       prometheus.NewRegistry(),
		batchRows: newHistogram(prometheus.ExponentialBuckets(1, 2, 14), 1),
	}
	m.loads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangboost_model_loads_total", Help: "Model loads by model and result (ok, failed); a failed reload keeps the older version serving.",
	}, []string{"model", "result"})
	m.series.Store(&map[seriesKey]*series{})
	m.reg.MustRegister(requestCollector{m}, m.loads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest records one finished request.
func (m *Metrics) ObserveRequest(model, protocol, status string, d time.Duration) {
	key := seriesKey{model, protocol, status}
	s := m.last.Load()
	if s == nil || s.key != key {
		var ok bool
		if s, ok = (*m.series.Load())[key]; !ok {
			s = m.addSeries(key)
		}
		m.last.Store(s)
	}
	s.h.observe(uint64(max(d, 0)))
}

// addSeries puts the series of a label set not seen before into the map.
func (m *Metrics) addSeries(key seriesKey) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := &series{key: key, h: newHistogram(latencyBounds, 1e9)} // observed in nanoseconds
	next := make(map[seriesKey]*series, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = s
	m.series.Store(&next)
	return s
}

// requestCollector hands a scrape the request counters, latency histograms and batch sizes.
type requestCollector struct{ m *Metrics }

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- latencyDesc
	ch <- batchRowsDesc
}

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	for key, s := range *c.m.series.Load() {
		count, sum, buckets := s.h.snapshot()
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(count), key.model, key.protocol, key.status)
		ch <- prometheus.MustNewConstHistogram(latencyDesc, count, sum, buckets, key.model, key.protocol, key.status)
	}
	count, sum, buckets := c.m.batchRows.snapshot()
	ch <- prometheus.MustNewConstHistogram(batchRowsDesc, count, sum, buckets)
}

// ObserveLoad records one model load and whether it failed.
func (m *Metrics) ObserveLoad(model string, err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.loads.WithLabelValues(model, result).Inc()
}

// ObserveBatch records the rows of one evaluation.
func (m *Metrics) ObserveBatch(rows int) { m.batchRows.observe(uint64(max(rows, 0))) }

// classicText is the content type of Prometheus' text format as scrapers have always known it.
const classicText = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the metrics: OpenMetrics or an escaping scheme when the scraper's Accept asks
// for them, else the classic text format. client_golang labels even the classic answer with
// "escaping=underscores", which older scrapers and proxies do not parse; every metric name here
// is a legacy one, so the classic type describes the same bytes.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept := r.Header.Get("Accept")
		if strings.Contains(accept, "openmetrics") || strings.Contains(accept, "escaping=") {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&classicWriter{ResponseWriter: w}, r)
	})
}

// classicWriter answers with the classic text content type.
type classicWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

func (c *classicWriter) WriteHeader(code int) {
	if c.wroteHeader {
		return
	}
	c.wroteHeader = true
	if strings.HasPrefix(c.Header().Get("Content-Type"), "text/plain") {
		c.Header().Set("Content-Type", classicText)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *classicWriter) Write(b []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}
