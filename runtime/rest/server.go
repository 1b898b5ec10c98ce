// Package rest serves the V2 / Open Inference Protocol over HTTP with echo, plus KServe's
// repository extension, the V1 protocol and Prometheus metrics. Handlers return typed errors;
// one error handler turns them into {"error": "..."} with the status from the v2 table.
package rest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"

	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/service"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Options are the REST server's limits.
type Options struct {
	MaxBodyBytes int64
	// RequestTimeout is the http.Server's ReadTimeout, named in the error a client gets when
	// its body does not arrive in time.
	RequestTimeout time.Duration
	// MaxInflightBodyBytes bounds the request bodies held at once over all requests (0: none).
	MaxInflightBodyBytes int64
}

// New returns the handler of every route.
func New(svc *service.Service, opts Options, log *slog.Logger) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	h := &handlers{svc: svc, opts: opts, log: log, budget: &bodyBudget{limit: opts.MaxInflightBodyBytes}}
	e.HTTPErrorHandler = h.errorHandler

	e.GET("/", h.root)
	e.GET("/v2/health/live", h.live)
	e.GET("/v2/health/ready", h.ready)
	e.GET("/v2", h.serverMetadata)
	e.GET("/v2/", h.serverMetadata)
	e.GET("/v2/models", h.listModels)
	for _, prefix := range []string{"/v2/models/:model", "/v2/models/:model/versions/:version"} {
		e.GET(prefix, h.modelMetadata)
		e.GET(prefix+"/ready", h.modelReady)
		// Without a version, routes.ServeHTTP serves the route itself (serveInfer); the
		// router's entry is what it matches.
		e.POST(prefix+"/infer", h.infer)
	}
	e.POST("/v2/repository/models/:model/load", h.load)
	e.POST("/v2/repository/models/:model/unload", h.unload)
	e.GET("/v1/models", h.v1List)
	// V1 paths end in ":predict"; echo reads ":" as a parameter, so the verb is split off here.
	e.GET("/v1/models/:model", h.v1Model)
	e.POST("/v1/models/:model", h.v1Verb)
	e.GET("/metrics", echo.WrapHandler(svc.Metrics.Handler()))
	return &routes{e: e, h: h}
}

// routes serves the V2 infer route itself (serveInfer) and echo's other routes with the
// request middleware (recoverAndLog) around each. For those it is echo's ServeHTTP without
// echo's middleware chain, which echo builds anew for every request: a closure allocated and
// called per request, for a chain that never changes.
type routes struct {
	e *echo.Echo
	h *handlers
}

func (rt *routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := echo.GetPath(r)
	if model, ok := inferModel(r.Method, path); ok {
		rt.h.serveInfer(w, r, model)
		return
	}
	c := rt.e.AcquireContext()
	c.Reset(r, w)
	rt.e.Router().Find(r.Method, path, c)
	if err := rt.h.recoverAndLog(c, c.Handler()); err != nil {
		rt.e.HTTPErrorHandler(err, c)
	}
	rt.e.ReleaseContext(c)
}

// The V2 infer route without a version, which nearly every request takes: routes.ServeHTTP
// matches it itself and serves it on net/http's request and writer. Through echo, a one-row
// request paid for the router's walk of its tree (6% of the handler's CPU), the context's
// reset, its parameter lookups and the response wrapper, all for a route known by its path.
const (
	inferPrefix = "/v2/models/"
	inferSuffix = "/infer"
	inferRoute  = inferPrefix + ":model" + inferSuffix
)

// inferModel is the model of a POST to /v2/models/{model}/infer, as echo's router reads it from
// the path echo.GetPath gives (the raw path's segment, not unescaped), or false for any other
// request.
func inferModel(method, p string) (string, bool) {
	if method != http.MethodPost {
		return "", false
	}
	if len(p) <= len(inferPrefix)+len(inferSuffix) || !strings.HasPrefix(p, inferPrefix) || !strings.HasSuffix(p, inferSuffix) {
		return "", false
	}
	model := p[len(inferPrefix) : len(p)-len(inferSuffix)]
	if strings.IndexByte(model, '/') >= 0 {
		return "", false
	}
	return model, true
}

type handlers struct {
	svc    *service.Service
	opts   Options
	log    *slog.Logger
	budget *bodyBudget
}

// requestIDHeader carries a request's id both ways: a client may set it, and every answer has it.
const requestIDHeader = "X-Request-Id"

// idPrefix makes request ids of this process distinct from other replicas'.
var (
	idPrefix  = newIDPrefix()
	idCounter atomic.Uint64
)

func newIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

// requestID is the answer's X-Request-Id header value: the client's id, or a new one, a
// per-process random prefix and a counter, unique without a random read per request.
// The client's is its own header's value, shared (header values are only read); a new
// one is a single allocation, the id's bytes and the value together.
func requestID(r *http.Request) []string {
	if v := r.Header[requestIDHeader]; len(v) > 0 && v[0] != "" {
		return v[:1:1]
	}
	id := new(struct {
		value [1]string
		b     [32]byte
	})
	b := strconv.AppendUint(append(id.b[:0], idPrefix...), idCounter.Add(1), 16)
	id.value[0] = unsafe.String(&b[0], len(b))
	return id.value[:]
}

// headerValue is h.Get(key) for a key in canonical form: Get canonicalizes its key first, a
// scan of it per call.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// clockStart anchors request timings: time.Since of a fixed time reads the monotonic clock
// only, where time.Now reads the wall clock too (54 against 88 ns on the 2-core VM).
var clockStart = time.Now()

// statusLabels are the metrics' status labels of HTTP codes, made once rather than per request.
var statusLabels = func() (l [500]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 100 && code < 600 {
		return statusLabels[code-100]
	}
	return strconv.Itoa(code)
}

// begin starts a request's record: its clock, and its id, which the answer's header carries.
func (h *handlers) begin(w http.ResponseWriter, r *http.Request) (start time.Duration, id string) {
	start = time.Since(clockStart)
	idValue := requestID(r)
	// The id is a canonical header name already: no need for Header.Set to check it.
	w.Header()[requestIDHeader] = idValue
	return start, idValue[0]
}

// panicked is the error of a handler that panicked with p, logged with its stack.
func (h *handlers) panicked(id string, p any) error {
	h.log.Error("panic in handler", "request_id", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return v2.Errorf(v2.KindInternal, "internal error: %v", p)
}

// finish measures an answered request (protocol "" for routes that are not inference, label
// its model's metrics label, service.ModelLabel) and logs it when it failed, or every request
// at debug level.
func (h *handlers) finish(r *http.Request, start time.Duration, id, protocol, label string, status int) {
	took := time.Since(clockStart) - start
	if protocol != "" {
		h.svc.Metrics.ObserveRequest(label, protocol, statusLabel(status), took)
	}
	if status >= 400 || h.log.Enabled(r.Context(), slog.LevelDebug) {
		h.log.Info("request", "request_id", id, "method", r.Method, "path", r.URL.Path,
			"status", status, "duration_ms", float64(took.Microseconds())/1000)
	}
}

// recoverAndLog runs an echo route's handler, turning a panic into a 500 (a request never
// takes the process down), and logs and measures every request.
func (h *handlers) recoverAndLog(c echo.Context, next echo.HandlerFunc) (err error) {
	start, id := h.begin(c.Response(), c.Request())
	defer func() {
		if p := recover(); p != nil {
			err = h.panicked(id, p)
		}
		if err != nil {
			c.Error(err)
		}
		protocol, label := inferenceProtocol(c), ""
		if protocol != "" {
			model, _, _ := strings.Cut(c.Param("model"), ":") // V1's path names "model:verb"
			label = h.svc.ModelLabel(model)
		}
		h.finish(c.Request(), start, id, protocol, label, c.Response().Status)
	}()
	return next(c)
}

// serveInfer is recoverAndLog around the infer route, for a POST to /v2/models/{model}/infer
// that routes.ServeHTTP matched itself.
func (h *handlers) serveInfer(w http.ResponseWriter, r *http.Request, model string) {
	start, id := h.begin(w, r)
	status, answered := http.StatusOK, false
	var err error
	defer func() {
		if p := recover(); p != nil {
			err = h.panicked(id, p)
		}
		label := model // served: a model this server has, whose label is its name
		if err != nil {
			label = h.svc.ModelLabel(model)
			if !answered {
				status = v2.HTTPStatus(err)
				writeError(w, status, err.Error())
			}
		}
		h.finish(r, start, id, "v2", label, status)
	}()
	answered, err = h.inferTo(w, r, model, "", id)
}

// inferenceProtocol is "v2" or "v1" for an inference route, "" for others.
func inferenceProtocol(c echo.Context) string {
	switch {
	case strings.HasSuffix(c.Path(), "/infer"):
		return "v2"
	case c.Path() == "/v1/models/:model" && c.Request().Method == http.MethodPost:
		return "v1"
	}
	return ""
}

// errorHandler answers an echo route's error in the protocol's shape, {"error": "..."}, with
// the status of the v2 table (or of echo's own errors: no route, method not allowed).
func (h *handlers) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status := v2.HTTPStatus(err)
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		msg = fmt.Sprint(he.Message)
		if status == http.StatusNotFound {
			msg = fmt.Sprintf("no route %s %s", c.Request().Method, c.Request().URL.Path)
		}
		if status == http.StatusMethodNotAllowed {
			msg = fmt.Sprintf("method %s not allowed on %s", c.Request().Method, c.Request().URL.Path)
		}
	}
	writeError(c.Response(), status, msg)
}

// writeError writes the protocol's error answer: {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header()[echo.HeaderContentType] = applicationJSON
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v2.ErrorBody{Error: msg})
}

// root answers GET / as KServe's model server does, {"status": "alive"}: KServe's V1 client
// reads that field in is_server_live.
func (h *handlers) root(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "alive"})
}

func (h *handlers) live(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]bool{"live": true})
}

func (h *handlers) ready(c echo.Context) error {
	if ok, err := h.svc.Registry.Ready(); !ok {
		if err == nil {
			err = v2.Errorf(v2.KindNotReady, "no models")
		}
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"ready": true})
}

func (h *handlers) serverMetadata(c echo.Context) error {
	return c.JSON(http.StatusOK, v2.ServerMetadata{Name: service.Name, Version: service.Version, Extensions: service.Extensions})
}

func (h *handlers) listModels(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string][]string{"models": h.svc.Registry.Names()})
}

// modelMetadata answers the V2 model metadata, plus a "parameters" object with the serving
// file, when it was loaded, whether its requests are batched (under --enable_batching=auto the
// model's evaluation cost decided) and the last failed load (a failed reload keeps the older
// version serving, and this is where a client sees it).
func (h *handlers) modelMetadata(c echo.Context) error {
	m, l, err := h.svc.Acquire(c.Param("model"), c.Param("version"))
	if err != nil {
		return err
	}
	defer l.Release()
	st := m.Status()
	params := map[string]string{"model_file": st.File, "loaded_at": st.LoadedAt.UTC().Format(time.RFC3339Nano),
		"batching": strconv.FormatBool(service.Batched(l))}
	if st.LastLoadError != "" {
		params["last_load_error"] = st.LastLoadError
		params["last_load_failed_at"] = st.FailedAt.UTC().Format(time.RFC3339Nano)
	}
	return c.JSON(http.StatusOK, struct {
		v2.ModelMetadata
		Parameters map[string]string `json:"parameters"`
	}{infer.Metadata(m.Name, m.Version, l.Forest), params})
}

func (h *handlers) modelReady(c echo.Context) error {
	m, err := h.svc.Registry.Get(c.Param("model"), c.Param("version"))
	if err != nil {
		return err
	}
	if ok, err := m.Ready(); !ok {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": m.Name, "ready": true})
}

// infer serves the versioned infer route (routes.ServeHTTP serves the one without a version).
func (h *handlers) infer(c echo.Context) error {
	_, err := h.inferTo(c.Response(), c.Request(), c.Param("model"), c.Param("version"), headerValue(c.Response().Header(), requestIDHeader))
	return err
}

// inferTo answers a V2 infer request for model (version "": the serving one) on w. id answers
// a request that has none. answered says whether the answer's header went out, after which an
// error can no longer be answered.
func (h *handlers) inferTo(w http.ResponseWriter, r *http.Request, model, version, id string) (answered bool, err error) {
	m, l, err := h.svc.Acquire(model, version)
	if err != nil {
		return false, err
	}
	defer l.Release()
	x := getExchange()
	defer putExchange(x)
	body, reserved, err := h.readBody(r, x.body)
	if err != nil {
		return false, err
	}
	defer h.budget.give(reserved)
	x.body = body
	jsonLen, err := x.serve(r.Context(), h.svc, m, l, headerValue(r.Header, v2.HeaderContentLength), id)
	if err != nil {
		return false, err
	}
	header := w.Header()
	if jsonLen > 0 {
		header[v2.HeaderContentLength] = []string{strconv.Itoa(jsonLen)}
		header[echo.HeaderContentType] = octetStream
	} else {
		header[echo.HeaderContentType] = applicationJSON
	}
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(x.resp)
	return true, err
}

// Content-Type values of infer answers, shared by every answer: net/http only reads header
// values (echo's c.JSONBlob would make a new one per request).
var (
	applicationJSON = []string{echo.MIMEApplicationJSON}
	octetStream     = []string{echo.MIMEOctetStream}
)

func (h *handlers) load(c echo.Context) error {
	name := c.Param("model")
	if err := h.svc.Registry.Load(name); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": name, "load": true})
}

func (h *handlers) unload(c echo.Context) error {
	name := c.Param("model")
	if err := h.svc.Registry.Unload(name); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": name, "unload": true})
}
