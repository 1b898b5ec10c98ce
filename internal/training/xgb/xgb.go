// Package xgb binds libxgboost's C API through cgo: DMatrix, Booster, prediction and the
// collective communicator used by distributed training.
//
// libxgboost keeps its last error, its prediction output buffer and its communicator in
// thread-local storage. Every C call that produces an error message or a buffer is therefore
// wrapped in one C function that also copies the message or buffer out, so a single method call
// is safe from any goroutine. Training (building a DMatrix, then boosting on it) must stay on one
// OS thread: a goroutine that migrates between the two occasionally sees "0 feature is supplied".
// Code that uses the collective (CommunicatorInit ... Finalize) must
// make every call from one goroutine locked to its OS thread (runtime.LockOSThread); otherwise a
// call lands on a thread without a communicator and that rank silently trains alone.
//
// The binding targets libxgboost 3.0 (Debian 13's), linked from the sysroot that
// scripts/xgboost-sysroot.sh makes; make exports the cgo flags (scripts/xgboost-flags.sh).
package xgb

/*
#cgo LDFLAGS: -lxgboost
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>
#include <xgboost/version_config.h>

// A build that found another libxgboost (the host's Debian 12 1.7.4, say) stops here rather than
// training with a library whose tracker and parameters differ.
#if XGBOOST_VER_MAJOR < 3
#error "libxgboost 3 is required: build with make, or run eval \"$(scripts/xgboost-flags.sh env)\" before go build/test (the headers found are an older libxgboost)"
#endif

// GB_CALL runs one libxgboost call with asynchronous signals blocked on the calling thread.
// rabit's PollHelper::Poll (libxgboost 1.7) fails the whole collective call on any poll() error,
// EINTR included, and the Go runtime sends SIGURG to its threads to preempt goroutines, so a
// signal landing on the thread blocked in an allreduce ended training with "Failed to poll." on
// that rank (and "Allreduce failed" on the others). Signals that arrive meanwhile stay pending and
// are delivered when the mask is restored; process-directed ones (SIGTERM) go to other threads.
// Synchronous fault signals stay unblocked so a crash is still reported. Threads libxgboost
// starts inside a call (the tracker's, in XGTrackerRun) inherit the blocked mask, so they are
// spared the Go runtime's signals too.
static void gb_block_signals(sigset_t* old) {
	sigset_t s;
	sigfillset(&s);
	sigdelset(&s, SIGSEGV);
	sigdelset(&s, SIGBUS);
	sigdelset(&s, SIGFPE);
	sigdelset(&s, SIGILL);
	sigdelset(&s, SIGTRAP);
	sigdelset(&s, SIGABRT);
	pthread_sigmask(SIG_BLOCK, &s, old);
}
#define GB_CALL(call) ({ sigset_t gb_old_; gb_block_signals(&gb_old_); int gb_rc_ = (call); pthread_sigmask(SIG_SETMASK, &gb_old_, NULL); gb_rc_; })

// gb_error copies libxgboost's thread-local last error into a malloc'd string, or returns NULL.
static char* gb_error(int rc) {
	if (rc == 0) return NULL;
	const char* msg = XGBGetLastError();
	return strdup(msg ? msg : "unknown libxgboost error");
}

static char* gb_dmatrix_dense(const char* array, const char* cfg, DMatrixHandle* out) {
	return gb_error(GB_CALL(XGDMatrixCreateFromDense(array, cfg, out)));
}
static char* gb_dmatrix_set_float(DMatrixHandle h, const char* field, const float* v, bst_ulong n) {
	return gb_error(GB_CALL(XGDMatrixSetFloatInfo(h, field, v, n)));
}
static char* gb_dmatrix_set_group(DMatrixHandle h, const unsigned* v, bst_ulong n) {
	return gb_error(GB_CALL(XGDMatrixSetUIntInfo(h, "group", v, n)));
}
static char* gb_dmatrix_set_str(DMatrixHandle h, const char* field, const char** v, bst_ulong n) {
	return gb_error(GB_CALL(XGDMatrixSetStrFeatureInfo(h, field, v, n)));
}
static char* gb_dmatrix_shape(DMatrixHandle h, bst_ulong* rows, bst_ulong* cols) {
	int rc = GB_CALL(XGDMatrixNumRow(h, rows));
	if (rc == 0) rc = GB_CALL(XGDMatrixNumCol(h, cols));
	return gb_error(rc);
}
static char* gb_booster_create(DMatrixHandle* dms, bst_ulong n, BoosterHandle* out) {
	return gb_error(GB_CALL(XGBoosterCreate(dms, n, out)));
}
static char* gb_booster_set_param(BoosterHandle h, const char* k, const char* v) {
	return gb_error(GB_CALL(XGBoosterSetParam(h, k, v)));
}
static char* gb_booster_update(BoosterHandle h, int iter, DMatrixHandle d) {
	return gb_error(GB_CALL(XGBoosterUpdateOneIter(h, iter, d)));
}
static char* gb_booster_eval(BoosterHandle h, int iter, DMatrixHandle* dms, const char** names, bst_ulong n, char** out) {
	const char* res = NULL;
	int rc = GB_CALL(XGBoosterEvalOneIter(h, iter, dms, names, n, &res));
	if (rc == 0) *out = strdup(res);
	return gb_error(rc);
}

// gb_copy_prediction copies a prediction result out of libxgboost's thread-local buffer.
static void gb_copy_prediction(const bst_ulong* shape, bst_ulong dim, const float* res,
		float** out, bst_ulong* out_len, bst_ulong* out_shape, bst_ulong* out_dim) {
	bst_ulong n = 1;
	for (bst_ulong i = 0; i < dim && i < 8; i++) { out_shape[i] = shape[i]; n *= shape[i]; }
	*out_dim = dim;
	*out_len = n;
	*out = (float*)malloc(n * sizeof(float) + 1);
	memcpy(*out, res, n * sizeof(float));
}
static char* gb_predict_dmatrix(BoosterHandle h, DMatrixHandle d, const char* cfg,
		float** out, bst_ulong* out_len, bst_ulong* out_shape, bst_ulong* out_dim) {
	const bst_ulong* shape = NULL; bst_ulong dim = 0; const float* res = NULL;
	int rc = GB_CALL(XGBoosterPredictFromDMatrix(h, d, cfg, &shape, &dim, &res));
	if (rc == 0) gb_copy_prediction(shape, dim, res, out, out_len, out_shape, out_dim);
	return gb_error(rc);
}
static char* gb_predict_dense(BoosterHandle h, const char* array, const char* cfg,
		float** out, bst_ulong* out_len, bst_ulong* out_shape, bst_ulong* out_dim) {
	const bst_ulong* shape = NULL; bst_ulong dim = 0; const float* res = NULL;
	int rc = GB_CALL(XGBoosterPredictFromDense(h, array, cfg, NULL, &shape, &dim, &res));
	if (rc == 0) gb_copy_prediction(shape, dim, res, out, out_len, out_shape, out_dim);
	return gb_error(rc);
}
static char* gb_booster_save(BoosterHandle h, const char* path) {
	return gb_error(GB_CALL(XGBoosterSaveModel(h, path)));
}
static char* gb_booster_load(BoosterHandle h, const char* path) {
	return gb_error(GB_CALL(XGBoosterLoadModel(h, path)));
}
static char* gb_booster_load_buffer(BoosterHandle h, const void* buf, bst_ulong n) {
	return gb_error(GB_CALL(XGBoosterLoadModelFromBuffer(h, buf, n)));
}
static char* gb_booster_save_buffer(BoosterHandle h, const char* cfg, char** out, bst_ulong* n) {
	const char* buf = NULL;
	int rc = GB_CALL(XGBoosterSaveModelToBuffer(h, cfg, n, &buf));
	if (rc == 0) { *out = (char*)malloc(*n + 1); memcpy(*out, buf, *n); }
	return gb_error(rc);
}
static char* gb_booster_save_config(BoosterHandle h, char** out) {
	const char* buf = NULL; bst_ulong n = 0;
	int rc = GB_CALL(XGBoosterSaveJsonConfig(h, &n, &buf));
	if (rc == 0) { *out = (char*)malloc(n + 1); memcpy(*out, buf, n); (*out)[n] = 0; }
	return gb_error(rc);
}
static char* gb_booster_num_feature(BoosterHandle h, bst_ulong* out) {
	return gb_error(GB_CALL(XGBoosterGetNumFeature(h, out)));
}
static char* gb_booster_rounds(BoosterHandle h, int* out) {
	return gb_error(GB_CALL(XGBoosterBoostedRounds(h, out)));
}
static char* gb_booster_dump(BoosterHandle h, const char* fmap, int stats, const char* format, char** out) {
	bst_ulong n = 0; const char** trees = NULL;
	int rc = GB_CALL(XGBoosterDumpModelEx(h, fmap, stats, format, &n, &trees));
	if (rc != 0) return gb_error(rc);
	size_t total = 3;
	for (bst_ulong i = 0; i < n; i++) total += strlen(trees[i]) + 2;
	char* s = (char*)malloc(total); char* p = s;
	*p++ = '[';
	for (bst_ulong i = 0; i < n; i++) {
		if (i) *p++ = ',';
		size_t l = strlen(trees[i]); memcpy(p, trees[i], l); p += l;
	}
	*p++ = ']'; *p = 0;
	*out = s;
	return NULL;
}
static char* gb_booster_set_str(BoosterHandle h, const char* field, const char** v, bst_ulong n) {
	return gb_error(GB_CALL(XGBoosterSetStrFeatureInfo(h, field, v, n)));
}
static char* gb_booster_set_attr(BoosterHandle h, const char* k, const char* v) {
	return gb_error(GB_CALL(XGBoosterSetAttr(h, k, v)));
}
// The wrappers below are not static: tracker.go declares and calls them.
char* gb_build_info(char** out) {
	const char* info = NULL;
	int rc = GB_CALL(XGBuildInfo(&info));
	if (rc == 0) *out = strdup(info);
	return gb_error(rc);
}
char* gb_tracker_create(const char* cfg, TrackerHandle* out) {
	return gb_error(GB_CALL(XGTrackerCreate(cfg, out)));
}
char* gb_tracker_run(TrackerHandle h) { return gb_error(GB_CALL(XGTrackerRun(h, "{}"))); }
char* gb_tracker_worker_args(TrackerHandle h, char** out) {
	const char* args = NULL;
	int rc = GB_CALL(XGTrackerWorkerArgs(h, &args));
	if (rc == 0) *out = strdup(args);
	return gb_error(rc);
}
char* gb_tracker_wait(TrackerHandle h) { return gb_error(GB_CALL(XGTrackerWaitFor(h, "{}"))); }
char* gb_tracker_free(TrackerHandle h) { return gb_error(GB_CALL(XGTrackerFree(h))); }
static char* gb_comm_init(const char* cfg) { return gb_error(GB_CALL(XGCommunicatorInit(cfg))); }
static char* gb_comm_finalize(void) { return gb_error(GB_CALL(XGCommunicatorFinalize())); }
static char* gb_comm_allreduce(void* buf, size_t n, int dtype, int op) {
	return gb_error(GB_CALL(XGCommunicatorAllreduce(buf, n, dtype, op)));
}
static char* gb_comm_print(const char* msg) { return gb_error(GB_CALL(XGCommunicatorPrint(msg))); }
static char* gb_comm_broadcast(void* buf, size_t n, int root) {
	return gb_error(GB_CALL(XGCommunicatorBroadcast(buf, n, root)));
}
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"
)

// Version reports the linked libxgboost's version, e.g. "3.0.0".
func Version() string {
	var major, minor, patch C.int
	C.XGBoostVersion(&major, &minor, &patch)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// check turns a malloc'd error string from a wrapper into a Go error.
func check(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	text := C.GoString(msg)
	// libxgboost appends a native stack trace that says nothing to a user.
	if i := strings.Index(text, "Stack trace:"); i >= 0 {
		text = text[:i]
	}
	return errors.New(strings.TrimSpace(text))
}

// arrayInterface describes a row-major float32 matrix in numpy's __array_interface__ JSON, the
// form libxgboost's dense constructors and in-place prediction take. The data pointer must stay
// alive (runtime.KeepAlive) for the duration of the C call.
func arrayInterface(data []float32, nrow, ncol int) (string, error) {
	if nrow < 0 || ncol <= 0 || len(data) != nrow*ncol {
		return "", fmt.Errorf("dense matrix: %d values cannot be %d rows x %d columns", len(data), nrow, ncol)
	}
	var ptr uintptr
	if len(data) > 0 {
		ptr = uintptr(unsafe.Pointer(&data[0]))
	}
	return fmt.Sprintf(`{"data":[%d,true],"shape":[%d,%d],"typestr":"<f4","version":3}`, ptr, nrow, ncol), nil
}

// missingJSON encodes the missing-value marker; JSON has no NaN literal but libxgboost's parser
// accepts it.
func missingJSON(missing float32) string {
	if math.IsNaN(float64(missing)) {
		return "NaN"
	}
	return strconv.FormatFloat(float64(missing), 'g', -1, 32)
}

// DMatrix is libxgboost's data matrix. Free it when done; a finalizer is the safety net.
type DMatrix struct {
	h C.DMatrixHandle
}

// NewDMatrixDense builds a DMatrix from nrow x ncol row-major values; cells equal to missing
// (NaN by default) are absent.
func NewDMatrixDense(data []float32, nrow, ncol int, missing float32) (*DMatrix, error) {
	ai, err := arrayInterface(data, nrow, ncol)
	if err != nil {
		return nil, err
	}
	cai := C.CString(ai)
	defer C.free(unsafe.Pointer(cai))
	ccfg := C.CString(fmt.Sprintf(`{"missing":%s,"nthread":0}`, missingJSON(missing)))
	defer C.free(unsafe.Pointer(ccfg))
	d := &DMatrix{}
	err = check(C.gb_dmatrix_dense(cai, ccfg, &d.h))
	runtime.KeepAlive(data)
	if err != nil {
		return nil, fmt.Errorf("create DMatrix: %w", err)
	}
	runtime.SetFinalizer(d, (*DMatrix).Free)
	return d, nil
}

// SetFloatInfo sets a per-row float field: "label", "weight", "base_margin", ...
func (d *DMatrix) SetFloatInfo(field string, v []float32) error {
	cf := C.CString(field)
	defer C.free(unsafe.Pointer(cf))
	var p *C.float
	if len(v) > 0 {
		p = (*C.float)(unsafe.Pointer(&v[0]))
	}
	err := check(C.gb_dmatrix_set_float(d.h, cf, p, C.bst_ulong(len(v))))
	runtime.KeepAlive(v)
	if err != nil {
		return fmt.Errorf("set DMatrix %s: %w", field, err)
	}
	return nil
}

// SetGroup sets the query group sizes of a ranking data set.
func (d *DMatrix) SetGroup(sizes []uint32) error {
	var p *C.uint
	if len(sizes) > 0 {
		p = (*C.uint)(unsafe.Pointer(&sizes[0]))
	}
	err := check(C.gb_dmatrix_set_group(d.h, p, C.bst_ulong(len(sizes))))
	runtime.KeepAlive(sizes)
	if err != nil {
		return fmt.Errorf("set DMatrix group: %w", err)
	}
	return nil
}

// SetFeatureNames names the columns; a booster trained on the matrix keeps the names in its model.
func (d *DMatrix) SetFeatureNames(names []string) error {
	if err := d.setStrInfo("feature_name", names); err != nil {
		return fmt.Errorf("set feature names: %w", err)
	}
	return nil
}

// SetFeatureTypes sets each feature's type: "q" (quantitative) or "c" (categorical: category
// codes, split on sets of them).
func (d *DMatrix) SetFeatureTypes(types []string) error {
	if err := d.setStrInfo("feature_type", types); err != nil {
		return fmt.Errorf("set feature types: %w", err)
	}
	return nil
}

// SetFeatureTypes records each feature's type ("q" or "c") in the booster, and so in the model
// file's learner.feature_types; nil leaves them unset.
func (b *Booster) SetFeatureTypes(types []string) error {
	if len(types) == 0 {
		return nil
	}
	err := withCStrings(types, func(cs **C.char) error {
		cf := C.CString("feature_type")
		defer C.free(unsafe.Pointer(cf))
		return check(C.gb_booster_set_str(b.h, cf, cs, C.bst_ulong(len(types))))
	})
	if err != nil {
		return fmt.Errorf("set the booster's feature types: %w", err)
	}
	return nil
}

// withCStrings calls f with values as a C array of C strings, freed afterwards.
func withCStrings(values []string, f func(**C.char) error) error {
	cs := (**C.char)(C.malloc(C.size_t(len(values)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(cs))
	csl := unsafe.Slice(cs, len(values))
	for i, n := range values {
		csl[i] = C.CString(n)
		defer C.free(unsafe.Pointer(csl[i]))
	}
	return f(cs)
}

func (d *DMatrix) setStrInfo(field string, values []string) error {
	if len(values) == 0 {
		return nil
	}
	return withCStrings(values, func(cs **C.char) error {
		cf := C.CString(field)
		defer C.free(unsafe.Pointer(cf))
		return check(C.gb_dmatrix_set_str(d.h, cf, cs, C.bst_ulong(len(values))))
	})
}

// Shape returns the number of rows and columns.
func (d *DMatrix) Shape() (rows, cols int, err error) {
	var r, c C.bst_ulong
	if err := check(C.gb_dmatrix_shape(d.h, &r, &c)); err != nil {
		return 0, 0, err
	}
	return int(r), int(c), nil
}

// Free releases the matrix; it is safe to call more than once.
func (d *DMatrix) Free() {
	if d.h != nil {
		C.XGDMatrixFree(d.h)
		d.h = nil
	}
}

// Booster is a gradient-boosted model in libxgboost.
type Booster struct {
	h C.BoosterHandle
}

// NewBooster creates a booster that caches the given matrices (the training and evaluation sets).
func NewBooster(cache ...*DMatrix) (*Booster, error) {
	handles := make([]C.DMatrixHandle, len(cache))
	for i, d := range cache {
		handles[i] = d.h
	}
	var p *C.DMatrixHandle
	if len(handles) > 0 {
		p = (*C.DMatrixHandle)(C.malloc(C.size_t(len(handles)) * C.size_t(unsafe.Sizeof(handles[0]))))
		defer C.free(unsafe.Pointer(p))
		copy(unsafe.Slice(p, len(handles)), handles)
	}
	b := &Booster{}
	if err := check(C.gb_booster_create(p, C.bst_ulong(len(handles)), &b.h)); err != nil {
		return nil, fmt.Errorf("create booster: %w", err)
	}
	runtime.KeepAlive(cache)
	runtime.SetFinalizer(b, (*Booster).Free)
	return b, nil
}

// LoadBooster reads a model saved by XGBoost (JSON, UBJSON or the legacy binary format; the
// extension selects the parser, as in libxgboost).
func LoadBooster(path string) (*Booster, error) {
	b, err := NewBooster()
	if err != nil {
		return nil, err
	}
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if err := check(C.gb_booster_load(b.h, cp)); err != nil {
		b.Free()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return b, nil
}

// LoadBoosterBytes reads a model from memory (JSON or UBJSON, sniffed by libxgboost) into a booster
// that caches the given matrices: boosting on from a checkpoint continues the model's rounds on
// them, and for deterministic settings gives the model an uninterrupted run gives.
func LoadBoosterBytes(model []byte, cache ...*DMatrix) (*Booster, error) {
	if len(model) == 0 {
		return nil, errors.New("load model: empty buffer")
	}
	b, err := NewBooster(cache...)
	if err != nil {
		return nil, err
	}
	err = check(C.gb_booster_load_buffer(b.h, unsafe.Pointer(&model[0]), C.bst_ulong(len(model))))
	runtime.KeepAlive(model)
	if err != nil {
		b.Free()
		return nil, fmt.Errorf("load model from buffer: %w", err)
	}
	return b, nil
}

// SetParam sets one training parameter, e.g. ("max_depth", "6").
func (b *Booster) SetParam(name, value string) error {
	cn, cv := C.CString(name), C.CString(value)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cv))
	if err := check(C.gb_booster_set_param(b.h, cn, cv)); err != nil {
		return fmt.Errorf("set param %s=%s: %w", name, value, err)
	}
	return nil
}

// SetParams sets several parameters. Parameters whose order matters to libxgboost (eval_metric may
// be given more than once) should be set with SetParam instead.
func (b *Booster) SetParams(params map[string]string) error {
	for k, v := range params {
		if err := b.SetParam(k, v); err != nil {
			return err
		}
	}
	return nil
}

// UpdateOneIter runs one boosting round on train.
func (b *Booster) UpdateOneIter(iter int, train *DMatrix) error {
	if err := check(C.gb_booster_update(b.h, C.int(iter), train.h)); err != nil {
		return fmt.Errorf("boosting round %d: %w", iter, err)
	}
	runtime.KeepAlive(train)
	return nil
}

// EvalOneIter evaluates the configured metrics on dms and returns libxgboost's line, e.g.
// "[3]\ttrain-mlogloss:0.12\teval-mlogloss:0.20".
func (b *Booster) EvalOneIter(iter int, dms []*DMatrix, names []string) (string, error) {
	if len(dms) != len(names) {
		return "", fmt.Errorf("eval: %d matrices but %d names", len(dms), len(names))
	}
	n := len(dms)
	if n == 0 {
		return fmt.Sprintf("[%d]", iter), nil
	}
	hs := (*C.DMatrixHandle)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.DMatrixHandle(nil)))))
	defer C.free(unsafe.Pointer(hs))
	cn := (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(cn))
	hsl, cnl := unsafe.Slice(hs, n), unsafe.Slice(cn, n)
	for i := range dms {
		hsl[i] = dms[i].h
		cnl[i] = C.CString(names[i])
		defer C.free(unsafe.Pointer(cnl[i]))
	}
	var out *C.char
	if err := check(C.gb_booster_eval(b.h, C.int(iter), hs, cn, C.bst_ulong(n), &out)); err != nil {
		return "", fmt.Errorf("evaluate round %d: %w", iter, err)
	}
	defer C.free(unsafe.Pointer(out))
	runtime.KeepAlive(dms)
	return C.GoString(out), nil
}

// PredictType selects what a prediction returns, numbered as libxgboost's "type" field.
type PredictType int

const (
	PredictValue              PredictType = 0 // what Booster.predict returns (transformed)
	PredictMargin             PredictType = 1 // untransformed margin
	PredictContribs           PredictType = 2 // SHAP values, exact TreeSHAP
	PredictApproxContribs     PredictType = 3
	PredictInteractions       PredictType = 4
	PredictApproxInteractions PredictType = 5
	PredictLeaf               PredictType = 6 // leaf index per tree
)

// PredictOptions mirrors libxgboost's prediction config.
type PredictOptions struct {
	Type           PredictType
	IterationBegin int
	IterationEnd   int  // 0 = all trees
	Training       bool // dart: apply dropout as during training
	StrictShape    bool
}

func (o PredictOptions) json(extra string) string {
	return fmt.Sprintf(`{"type":%d,"training":%t,"iteration_begin":%d,"iteration_end":%d,"strict_shape":%t%s}`,
		o.Type, o.Training, o.IterationBegin, o.IterationEnd, o.StrictShape, extra)
}

func collectPrediction(out *C.float, n C.bst_ulong, shape *[8]C.bst_ulong, dim C.bst_ulong) ([]float32, []uint64) {
	defer C.free(unsafe.Pointer(out))
	vals := make([]float32, int(n))
	copy(vals, unsafe.Slice((*float32)(unsafe.Pointer(out)), int(n)))
	sh := make([]uint64, int(dim))
	for i := range sh {
		sh[i] = uint64(shape[i])
	}
	return vals, sh
}

// Predict runs a prediction over a DMatrix.
func (b *Booster) Predict(d *DMatrix, o PredictOptions) ([]float32, []uint64, error) {
	ccfg := C.CString(o.json(""))
	defer C.free(unsafe.Pointer(ccfg))
	var out *C.float
	var n, dim C.bst_ulong
	var shape [8]C.bst_ulong
	if err := check(C.gb_predict_dmatrix(b.h, d.h, ccfg, &out, &n, &shape[0], &dim)); err != nil {
		return nil, nil, fmt.Errorf("predict: %w", err)
	}
	runtime.KeepAlive(d)
	vals, sh := collectPrediction(out, n, &shape, dim)
	return vals, sh, nil
}

// PredictDense predicts in place from nrow x ncol row-major values without building a DMatrix
// (libxgboost's in-place prediction).
func (b *Booster) PredictDense(data []float32, nrow, ncol int, missing float32, o PredictOptions) ([]float32, []uint64, error) {
	ai, err := arrayInterface(data, nrow, ncol)
	if err != nil {
		return nil, nil, err
	}
	cai := C.CString(ai)
	defer C.free(unsafe.Pointer(cai))
	// libxgboost 1.7 requires cache_id for in-place prediction (0: no cache).
	ccfg := C.CString(o.json(`,"cache_id":0,"missing":` + missingJSON(missing)))
	defer C.free(unsafe.Pointer(ccfg))
	var out *C.float
	var n, dim C.bst_ulong
	var shape [8]C.bst_ulong
	err = check(C.gb_predict_dense(b.h, cai, ccfg, &out, &n, &shape[0], &dim))
	runtime.KeepAlive(data)
	if err != nil {
		return nil, nil, fmt.Errorf("predict: %w", err)
	}
	vals, sh := collectPrediction(out, n, &shape, dim)
	return vals, sh, nil
}

// SaveModel writes the model; the extension chooses the format (.json JSON, .ubj UBJSON,
// anything else the legacy binary format in libxgboost 1.x and 2.x, as model.bst).
func (b *Booster) SaveModel(path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if err := check(C.gb_booster_save(b.h, cp)); err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	return nil
}

// ModelBytes serialises the model as "json" or "ubj".
func (b *Booster) ModelBytes(format string) ([]byte, error) {
	if format != "json" && format != "ubj" {
		return nil, fmt.Errorf("model format %q: want json or ubj", format)
	}
	ccfg := C.CString(`{"format":"` + format + `"}`)
	defer C.free(unsafe.Pointer(ccfg))
	var out *C.char
	var n C.bst_ulong
	if err := check(C.gb_booster_save_buffer(b.h, ccfg, &out, &n)); err != nil {
		return nil, fmt.Errorf("serialise model as %s: %w", format, err)
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}

// FormatFromPath returns "ubj" for a .ubj path and "json" otherwise.
func FormatFromPath(path string) string {
	if strings.EqualFold(filepath.Ext(path), ".ubj") {
		return "ubj"
	}
	return "json"
}

// Config returns the booster's JSON configuration (learner parameters, objective, ...).
func (b *Booster) Config() (string, error) {
	var out *C.char
	if err := check(C.gb_booster_save_config(b.h, &out)); err != nil {
		return "", fmt.Errorf("read booster config: %w", err)
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// DumpJSON returns the model as dump_model JSON: a JSON array of trees.
func (b *Booster) DumpJSON(withStats bool) ([]byte, error) {
	cfmap, cfmt := C.CString(""), C.CString("json")
	defer C.free(unsafe.Pointer(cfmap))
	defer C.free(unsafe.Pointer(cfmt))
	stats := C.int(0)
	if withStats {
		stats = 1
	}
	var out *C.char
	if err := check(C.gb_booster_dump(b.h, cfmap, stats, cfmt, &out)); err != nil {
		return nil, fmt.Errorf("dump model: %w", err)
	}
	defer C.free(unsafe.Pointer(out))
	return []byte(C.GoString(out)), nil
}

// NumFeatures returns the number of features the model was trained with.
func (b *Booster) NumFeatures() (int, error) {
	var n C.bst_ulong
	if err := check(C.gb_booster_num_feature(b.h, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// BoostedRounds returns the number of boosting rounds in the model.
func (b *Booster) BoostedRounds() (int, error) {
	var n C.int
	if err := check(C.gb_booster_rounds(b.h, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// SetAttr stores a string attribute in the model (e.g. best_iteration), as Booster.set_attr does.
func (b *Booster) SetAttr(key, value string) error {
	ck, cv := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	if err := check(C.gb_booster_set_attr(b.h, ck, cv)); err != nil {
		return fmt.Errorf("set attribute %s: %w", key, err)
	}
	return nil
}

// Free releases the booster; it is safe to call more than once.
func (b *Booster) Free() {
	if b.h != nil {
		C.XGBoosterFree(b.h)
		b.h = nil
	}
}

// CommunicatorInit joins libxgboost's collective (rabit). Keys are the ones libxgboost 3.0 reads
// (c_api.h, XGCommunicatorInit): dmlc_communicator, dmlc_tracker_uri, dmlc_tracker_port,
// dmlc_task_id, dmlc_timeout, dmlc_retry; Tracker.WorkerArgs returns the first three. The calling
// goroutine must be locked to its OS thread and stay so until CommunicatorFinalize.
func CommunicatorInit(cfg map[string]any) error {
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cs := C.CString(string(js))
	defer C.free(unsafe.Pointer(cs))
	if err := check(C.gb_comm_init(cs)); err != nil {
		return fmt.Errorf("join collective: %w", err)
	}
	return nil
}

// CommunicatorFinalize leaves the collective.
func CommunicatorFinalize() error {
	if err := check(C.gb_comm_finalize()); err != nil {
		return fmt.Errorf("leave collective: %w", err)
	}
	return nil
}

// Rank is this process's rank in the collective (0 when not distributed).
func Rank() int { return int(C.XGCommunicatorGetRank()) }

// WorldSize is the number of processes in the collective (1 when not distributed).
func WorldSize() int { return int(C.XGCommunicatorGetWorldSize()) }

// IsDistributed reports whether a collective with more than one process is active.
func IsDistributed() bool { return C.XGCommunicatorIsDistributed() != 0 }

// CommunicatorPrint sends a message to the tracker, which logs it.
func CommunicatorPrint(msg string) error {
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	return check(C.gb_comm_print(cs))
}

// Allreduce operations and data types, numbered as libxgboost's enums: collective::Op, and since
// 2.0 ArrayInterfaceHandler::Type for the data type (kF8 = 2; 1.7's DataType had kDouble = 7,
// which 3.0 reads as kI8 and sums a float64 buffer as integers).
const (
	opMax = 0
	opMin = 1
	opSum = 2

	dtypeFloat64 = 2
)

// AllreduceSumFloat64 sums v element-wise across all ranks, in place.
func AllreduceSumFloat64(v []float64) error { return allreduceFloat64(v, opSum) }

// AllreduceMaxFloat64 takes the element-wise maximum across all ranks, in place.
func AllreduceMaxFloat64(v []float64) error { return allreduceFloat64(v, opMax) }

func allreduceFloat64(v []float64, op int) error {
	if len(v) == 0 {
		return nil
	}
	buf := C.malloc(C.size_t(len(v) * 8))
	defer C.free(buf)
	cv := unsafe.Slice((*float64)(buf), len(v))
	copy(cv, v)
	if err := check(C.gb_comm_allreduce(buf, C.size_t(len(v)), dtypeFloat64, C.int(op))); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	copy(v, cv)
	return nil
}

// Broadcast copies root's buf into every other rank's buf, in place. Every rank calls it with a
// buf of the same length.
func Broadcast(buf []byte, root int) error {
	if len(buf) == 0 {
		return nil
	}
	cbuf := C.malloc(C.size_t(len(buf)))
	defer C.free(cbuf)
	cv := unsafe.Slice((*byte)(cbuf), len(buf))
	copy(cv, buf)
	if err := check(C.gb_comm_broadcast(cbuf, C.size_t(len(buf)), C.int(root))); err != nil {
		return fmt.Errorf("broadcast from rank %d: %w", root, err)
	}
	copy(buf, cv)
	return nil
}
