package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/service"
)

func newHandler(tb testing.TB, batching bool) http.Handler {
	tb.Helper()
	return New(newService(tb, batching), Options{MaxBodyBytes: 64 << 20}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// irisDir is the folder of the iris model the tests serve, under runtime/testdata (go test runs
// a package in its own folder).
var irisDir = filepath.Join("..", "testdata", "models", "iris")

// newService serves the iris model, with or without batching.
func newService(tb testing.TB, batching bool) *service.Service {
	tb.Helper()
	m := metrics.New()
	var b batcher.Options
	if batching {
		b = batcher.Options{MaxBatchRows: 64}
	}
	reg, err := registry.Open(irisDir, "iris", "", registry.Options{NewPredictor: service.NewPredictor(m, b)})
	if err != nil {
		tb.Fatal(err)
	}
	if ok, why := reg.Ready(); !ok {
		tb.Fatal(why)
	}
	return &service.Service{Registry: reg, Metrics: m, Limits: infer.Limits{MaxRows: 100000}}
}

func rowsJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"inputs":[{"name":"input-0","shape":[` + strconv.Itoa(n) + `,4],"datatype":"FP32","data":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("5.1,3.5,1.4,0.2")
	}
	b.WriteString(`]}]}`)
	return []byte(b.String())
}

func TestBatchingGivesTheSameAnswers(t *testing.T) {
	plain, batched := newHandler(t, false), newHandler(t, true)
	body := rowsJSON(3)
	results := make(chan string, 32)
	for i := 0; i < 32; i++ {
		go func() {
			w := httptest.NewRecorder()
			batched.ServeHTTP(w, httptest.NewRequest("POST", "/v2/models/iris/infer", bytes.NewReader(body)))
			results <- w.Body.String()
		}()
	}
	w := httptest.NewRecorder()
	plain.ServeHTTP(w, httptest.NewRequest("POST", "/v2/models/iris/infer", bytes.NewReader(body)))
	want := w.Body.String()
	for i := 0; i < 32; i++ {
		got := <-results
		// ids differ (generated per request); compare the outputs.
		if got[strings.Index(got, `"outputs"`):] != want[strings.Index(want, `"outputs"`):] {
			t.Fatalf("batched %s\nplain %s", got, want)
		}
	}
}

// FuzzInferBody: no request body may crash the server or get a 5xx.
func FuzzInferBody(f *testing.F) {
	h := newHandler(f, false)
	f.Add(rowsJSON(1), "")
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP16","parameters":{"binary_data_size":8}}]}`+"\x00\x3c\x00\x3c\x00\x3c\x00\x3c"), "86")
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"INT8","data":[1,2,3,NaN]}],"outputs":[{"name":"contribs"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, headerLen string) {
		r := httptest.NewRequest("POST", "/v2/models/iris/infer", bytes.NewReader(body))
		if headerLen != "" {
			r.Header.Set("Inference-Header-Content-Length", headerLen)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}

// TestRequestIDs: every answer carries X-Request-Id, the client's when it sent one, else
// a new one unique to the request; an infer request without an "id" is answered with
// that id, as KServe's server answers.
func TestRequestIDs(t *testing.T) {
	h := newHandler(t, false)
	do := func(id string) (header string, answer map[string]any) {
		t.Helper()
		r := httptest.NewRequest("POST", "/v2/models/iris/infer", bytes.NewReader(rowsJSON(1)))
		if id != "" {
			r.Header.Set("x-request-id", id)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatal(err)
		}
		return w.Header().Get("X-Request-Id"), answer
	}
	a, answerA := do("")
	b, _ := do("")
	if a == "" || b == "" || a == b || !strings.HasPrefix(b, idPrefix) {
		t.Fatalf("new request ids %q and %q: want two distinct ids starting %q", a, b, idPrefix)
	}
	if answerA["id"] != a {
		t.Fatalf("answer id %v, want the request id %q", answerA["id"], a)
	}
	c, answerC := do("trace-7")
	if c != "trace-7" || answerC["id"] != "trace-7" {
		t.Fatalf("client id trace-7 answered as header %q, id %v", c, answerC["id"])
	}
	// A new id is not changed by the next one (its bytes are its own).
	if d, _ := do(""); d == a || a != answerA["id"] {
		t.Fatalf("ids %q then %q", a, d)
	}
}

// TestInferRouteMatchesRouter: where routes.ServeHTTP matches the infer route itself, echo's
// router finds the same route and model for the request, and it does so for the usual paths.
func TestInferRouteMatchesRouter(t *testing.T) {
	rt := newHandler(t, false).(*routes)
	for _, c := range []struct {
		method, target string
		taken          bool // matched without the router
	}{
		{"POST", "/v2/models/iris/infer", true},
		{"POST", "/v2/models/a:b/infer", true},
		{"POST", "/v2/models/a%2Fb/infer", true},
		{"POST", "/v2/models/iris%20x/infer", true},
		{"POST", "/v2/models/%69ris/infer", true},
		{"POST", "/v2/models/versions/infer", true},
		{"POST", "/v2/models/ready/infer", true},
		{"POST", "/v2/models/infer/infer", true},
		{"POST", "/v2/models/iris/infer?x=1", true},
		{"POST", "/v2/models/infer", false},
		{"POST", "/v2/models//infer", false},
		{"POST", "/v2/models/iris/infer/", false},
		{"POST", "/v2/models/iris/inferx", false},
		{"POST", "/v2/models/iris/versions/1/infer", false},
		{"POST", "/v2/models/x/y/infer", false},
		{"POST", "/v2//models/iris/infer", false},
		{"POST", "/V2/models/iris/infer", false},
		{"POST", "/v2/models/iris/ready", false},
		{"GET", "/v2/models/iris/infer", false},
		{"PUT", "/v2/models/iris/infer", false},
	} {
		req := httptest.NewRequest(c.method, c.target, nil)
		ec := rt.e.NewContext(req, httptest.NewRecorder())
		rt.e.Router().Find(req.Method, echo.GetPath(req), ec)
		model, ok := inferModel(req.Method, echo.GetPath(req))
		if ok != c.taken {
			t.Errorf("%s %s: matched without the router %v, want %v", c.method, c.target, ok, c.taken)
		}
		if !ok {
			continue
		}
		if ec.Path() != inferRoute || ec.Param("model") != model || len(ec.ParamNames()) != 1 {
			t.Errorf("%s %s: model %q, the router finds route %q with params %q = %q", c.method, c.target, model, ec.Path(), ec.ParamNames(), ec.ParamValues())
		}
	}
}

// panickingPredictor fails every evaluation the worst way.
type panickingPredictor struct{}

func (panickingPredictor) PredictContext(context.Context, []float32, []float32, int, forest.OutputKind) ([]float32, error) {
	panic("evaluator fault")
}

// TestInferFailuresAnswerInTheProtocolShape: on the infer route routes.ServeHTTP serves
// itself and on the versioned one echo serves, a refused request and a handler that panics
// are answered with the v2 error body and status, the request id still in the header, and
// counted in the metrics under that status; the server goes on answering.
func TestInferFailuresAnswerInTheProtocolShape(t *testing.T) {
	m := metrics.New()
	reg, err := registry.Open(irisDir, "iris", "", registry.Options{NewPredictor: func(*forest.Model) (infer.Predictor, func()) {
		return panickingPredictor{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	svc := &service.Service{Registry: reg, Metrics: m}
	var logged bytes.Buffer
	h := New(svc, Options{MaxBodyBytes: 1 << 20}, slog.New(slog.NewTextHandler(&logged, nil)))
	for _, c := range []struct {
		target, body string
		status       int
		message      string
	}{
		{"/v2/models/iris/infer", string(rowsJSON(1)), http.StatusInternalServerError, "internal error: evaluator fault"},
		{"/v2/models/iris/infer", `{"inputs":[`, http.StatusBadRequest, "malformed request body"},
		{"/v2/models/nope/infer", string(rowsJSON(1)), http.StatusNotFound, "nope"},
		{"/v2/models/iris/versions/9/infer", string(rowsJSON(1)), http.StatusNotFound, "version"},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", c.target, strings.NewReader(c.body)))
		var answer struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil || w.Code != c.status || !strings.Contains(answer.Error, c.message) {
			t.Errorf("POST %s: %d %q, want %d with an error naming %q", c.target, w.Code, w.Body, c.status, c.message)
		}
		if ct := w.Header().Get("Content-Type"); ct != echo.MIMEApplicationJSON {
			t.Errorf("POST %s: Content-Type %q", c.target, ct)
		}
		if w.Header().Get(requestIDHeader) == "" {
			t.Errorf("POST %s: no request id", c.target)
		}
	}
	if !strings.Contains(logged.String(), "panic in handler") || !strings.Contains(logged.String(), "status=500") {
		t.Errorf("log lacks the panic or its request:\n%s", logged.String())
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`gangboost_requests_total{model="iris",protocol="v2",status="500"} 1`,
		`gangboost_requests_total{model="iris",protocol="v2",status="400"} 1`,
		`gangboost_requests_total{model="",protocol="v2",status="404"} 1`,
		`gangboost_requests_total{model="iris",protocol="v2",status="404"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
