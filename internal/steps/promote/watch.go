package promote

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Watch is a live challenger's watch window: before it is promoted, the challenger serves its
// share of the traffic for Window, and its runtime's own measurements (its Prometheus metrics)
// must stay within the bounds, or it is removed instead.
type Watch struct {
	Window time.Duration
	// MaxErrorRate is the share of the challenger's inference requests that may fail (a REST
	// status other than 2xx, a gRPC code other than OK).
	MaxErrorRate float64
	// MaxP99 bounds the p99 latency of its inference requests; 0: no bound.
	MaxP99 time.Duration
}

// The runtime's metrics the watch reads (runtime/metrics).
const (
	requestsMetric = "gangboost_requests_total"
	latencyMetric  = "gangboost_request_duration_seconds"
)

// maxMetricsBytes bounds a metrics page read: the runtime's is a few kB.
const maxMetricsBytes = 4 << 20

// Traffic is what the challenger's runtime measured in the window.
type Traffic struct {
	Requests, Errors float64
	// P99 is the upper bound of the latency bucket holding the 99th percentile; P99Over is set
	// when that is the open last bucket (beyond the largest bound).
	P99     time.Duration
	P99Over bool
}

// observe reads the challenger's metrics at metricsURL for model at the start and the end of the
// window and returns the difference.
func observe(ctx context.Context, hc *http.Client, metricsURL, model string, window time.Duration) (*Traffic, error) {
	before, err := scrape(ctx, hc, metricsURL)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(window):
	}
	after, err := scrape(ctx, hc, metricsURL)
	if err != nil {
		return nil, err
	}
	t := &Traffic{}
	was := counters(before, model)
	for key, n := range counters(after, model) {
		d := n - was[key]
		t.Requests += d
		if status, _, _ := strings.Cut(key, "/"); !succeeded(status) {
			t.Errors += d
		}
	}
	b0, b1 := buckets(before, model), buckets(after, model)
	bounds := make([]float64, 0, len(b1))
	for ub := range b1 {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	if t.Requests > 0 {
		want := 0.99 * t.Requests
		t.P99Over = true
		for _, ub := range bounds {
			if b1[ub]-b0[ub] >= want && !math.IsInf(ub, 1) {
				t.P99, t.P99Over = time.Duration(ub*float64(time.Second)), false
				break
			}
		}
		if t.P99Over && len(bounds) > 0 {
			// The largest finite bound, which the p99 exceeds.
			for i := len(bounds) - 1; i >= 0; i-- {
				if !math.IsInf(bounds[i], 1) {
					t.P99 = time.Duration(bounds[i] * float64(time.Second))
					break
				}
			}
		}
	}
	return t, nil
}

// succeeded reports whether a request status label is a success: REST 2xx, gRPC OK.
func succeeded(status string) bool { return strings.HasPrefix(status, "2") || status == "OK" }

func scrape(ctx context.Context, hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the challenger's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the challenger's metrics: GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("read the challenger's metrics at %s: %w", url, err)
	}
	return families, nil
}

// counters are the model's request counts by "<status>/<protocol>".
func counters(families map[string]*dto.MetricFamily, model string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families[requestsMetric].GetMetric() {
		if label(m, "model") == model {
			out[label(m, "status")+"/"+label(m, "protocol")] += m.GetCounter().GetValue()
		}
	}
	return out
}

// buckets are the model's cumulative latency bucket counts by upper bound, over every protocol
// and status.
func buckets(families map[string]*dto.MetricFamily, model string) map[float64]float64 {
	out := map[float64]float64{}
	for _, m := range families[latencyMetric].GetMetric() {
		if label(m, "model") != model {
			continue
		}
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		out[math.Inf(1)] += float64(h.GetSampleCount())
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// judge says whether the traffic stayed within the watch's bounds, and in a sentence what it saw.
func (w Watch) judge(t *Traffic) (bool, string) {
	rate := t.Errors / t.Requests
	p99 := t.P99.String()
	if t.P99Over {
		p99 = "over " + p99
	}
	seen := fmt.Sprintf("%.0f requests in %s, %.0f failed (%.2f%%), p99 %s", t.Requests, w.Window, t.Errors, 100*rate, p99)
	switch {
	case rate > w.MaxErrorRate:
		return false, fmt.Sprintf("%s: error rate above max_error_rate %g", seen, w.MaxErrorRate)
	case w.MaxP99 > 0 && (t.P99 > w.MaxP99 || t.P99Over):
		return false, fmt.Sprintf("%s: p99 above max_p99_ms %g", seen, float64(w.MaxP99)/float64(time.Millisecond))
	}
	return true, seen
}
