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
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	batchRows prometheus.Histogram
	loads     *prometheus.CounterVec

	// series caches each label set's request counter and latency histogram: WithLabelValues
	// hashes and checks the labels on every call, twice per request. The label sets are
	// bounded (models this server has, protocols, statuses), and so is the cache. It is
	// copied on write: a request reads it without a lock's shared writes (a read lock
	// costs two atomic updates of one cache line that every core's requests share).
	mu     sync.Mutex // serializes additions
	series atomic.Pointer[map[seriesKey]requestSeries]
}

type seriesKey struct{ model, protocol, status string }

type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// New registers the collectors, plus Go and process metrics.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gangboost_requests_total", Help: "Inference and metadata requests by model, protocol and status.",
		}, []string{"model", "protocol", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gangboost_request_duration_seconds", Help: "Request latency by model, protocol and status.",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1},
		}, []string{"model", "protocol", "status"}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gangboost_batch_rows", Help: "Rows evaluated per model call (per request, or per merged batch when batching is on).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
	}
	m.loads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangboost_model_loads_total", Help: "Model loads by model and result (ok, failed); a failed reload keeps the older version serving.",
	}, []string{"model", "result"})
	m.series.Store(&map[seriesKey]requestSeries{})
	m.reg.MustRegister(m.requests, m.latency, m.batchRows, m.loads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest records one finished request.
func (m *Metrics) ObserveRequest(model, protocol, status string, d time.Duration) {
	key := seriesKey{model, protocol, status}
	s, ok := (*m.series.Load())[key]
	if !ok {
		s = m.addSeries(key)
	}
	s.count.Inc()
	s.latency.Observe(d.Seconds())
}

// addSeries puts the series of a label set not seen before into the cache.
func (m *Metrics) addSeries(key seriesKey) requestSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := requestSeries{m.requests.WithLabelValues(key.model, key.protocol, key.status), m.latency.WithLabelValues(key.model, key.protocol, key.status)}
	next := make(map[seriesKey]requestSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = s
	m.series.Store(&next)
	return s
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
func (m *Metrics) ObserveBatch(rows int) { m.batchRows.Observe(float64(rows)) }

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
