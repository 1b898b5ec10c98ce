// Package registry holds the models a runtime serves: it finds model files in the model
// directory, loads them with the pure-Go evaluator, and tracks whether each is ready, and if not,
// why (the message names the file). A model's loaded version is reference-counted: a reload
// swaps in the new version at once and releases the old one when its last request is done.
package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Options say how loaded models are served and observed.
type Options struct {
	// NewPredictor wraps a loaded evaluator in what requests go through (e.g. a batcher); the
	// returned release func runs when that version is released. nil: the evaluator itself.
	NewPredictor func(*forest.Model) (infer.Predictor, func())
	// OnLoad is told the outcome of every load, for logs and metrics.
	OnLoad func(model, file string, err error)
}

// Loaded is one loaded version of a model: its evaluator, the predictor requests go through,
// and the trainer's metadata. Requests hold it between Acquire and Release.
type Loaded struct {
	Forest    *forest.Model
	Predictor infer.Predictor
	Meta      *modeldir.Metadata // nil when the folder has no metadata.json
	File      string
	LoadedAt  time.Time

	refs    atomic.Int64 // the model's own reference while current, plus one per request
	release func()
}

// FeatureNames are the model's column names: the model file's, else metadata.json's.
func (l *Loaded) FeatureNames() []string {
	if names := l.Forest.FeatureNames(); len(names) > 0 {
		return names
	}
	if l.Meta != nil {
		return l.Meta.FeatureNames
	}
	return nil
}

// Release gives back a reference from Model.Acquire. The last one frees the version's
// predictor (a batcher's goroutines).
func (l *Loaded) Release() {
	if l.refs.Add(-1) == 0 && l.release != nil {
		l.release()
	}
}

// Model is one served model.
type Model struct {
	Name    string
	Version string // "" when the model is not versioned
	Dir     string

	opts *Options
	// cur is the version serving; nil while loading, after unload, or after a failed first
	// load. It changes under mu; Acquire reads it without (see there).
	cur      atomic.Pointer[Loaded]
	mu       sync.RWMutex
	loadErr  error // the last load's failure; with cur set, a failed reload (cur keeps serving)
	failedAt time.Time
	unloaded bool
}

// Status is what a model's metadata and logs report about its loading.
type Status struct {
	Ready         bool
	File          string
	LoadedAt      time.Time
	LastLoadError string // the last load's failure, also while an older version keeps serving
	FailedAt      time.Time
}

// Ready reports whether the model can serve, and if not, why.
func (m *Model) Ready() (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.readyLocked()
}

func (m *Model) readyLocked() (bool, error) {
	switch {
	case m.cur.Load() != nil:
		return true, nil
	case m.unloaded:
		return false, v2.Errorf(v2.KindNotReady, "model %s is unloaded; load it with POST /v2/repository/models/%s/load", m.Name, m.Name)
	case m.loadErr != nil:
		return false, v2.Errorf(v2.KindNotReady, "model %s is not ready: %v", m.Name, m.loadErr)
	}
	return false, v2.Errorf(v2.KindNotReady, "model %s is still loading", m.Name)
}

// Acquire returns the serving version with a reference the caller must Release, or a
// not-ready error. It takes no lock: every request of every core acquires, and a read lock's
// two updates of one shared word cost more than the rest of it. A version read just as a
// reload or unload replaced it may already be released (no references left); it is never
// taken up again, and the version serving now is read instead.
func (m *Model) Acquire() (*Loaded, error) {
	for l := m.cur.Load(); l != nil; l = m.cur.Load() {
		if l.ref() {
			return l, nil
		}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if ok, err := m.readyLocked(); !ok {
		return nil, err
	}
	// Loaded meanwhile: while it is current its references include the model's own.
	l := m.cur.Load()
	l.refs.Add(1)
	return l, nil
}

// ref takes a reference unless the version has none left (it was released).
func (l *Loaded) ref() bool {
	for n := l.refs.Load(); n > 0; n = l.refs.Load() {
		if l.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
	return false
}

// Status reports the serving version and the last load's failure.
func (m *Model) Status() Status {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cur := m.cur.Load()
	s := Status{Ready: cur != nil, FailedAt: m.failedAt}
	if cur != nil {
		s.File, s.LoadedAt = cur.File, cur.LoadedAt
	}
	if m.loadErr != nil {
		s.LastLoadError = m.loadErr.Error()
	}
	return s
}

// load (re)reads the model folder. A first load that fails leaves the model not ready with
// the reason; a reload that fails keeps the serving version and records the failure, as
// Triton and KServe do, so a bad file pushed over a healthy model never takes it down.
func (m *Model) load() error {
	f, file, meta, err := readModelDir(m.Dir)
	var next *Loaded
	if err == nil {
		next = &Loaded{Forest: f, Meta: meta, File: file, LoadedAt: time.Now(), Predictor: f}
		if m.opts.NewPredictor != nil {
			next.Predictor, next.release = m.opts.NewPredictor(f)
		}
		next.refs.Store(1)
	}
	m.mu.Lock()
	var old *Loaded
	if err != nil {
		// After an unload nothing serves either way; readiness reports this failure, not
		// "unloaded", so the reason a load did not bring the model back is what a client reads.
		m.loadErr, m.failedAt, m.unloaded = err, time.Now(), false
	} else {
		old = m.cur.Swap(next)
		m.loadErr, m.unloaded = nil, false
	}
	m.mu.Unlock()
	if old != nil {
		old.Release()
	}
	if m.opts.OnLoad != nil {
		m.opts.OnLoad(m.Name, file, err)
	}
	return err
}

// unload stops serving; the released version is freed when its last request is done.
func (m *Model) unload() {
	m.mu.Lock()
	old := m.cur.Swap(nil)
	m.unloaded, m.loadErr = true, nil
	m.mu.Unlock()
	if old != nil {
		old.Release()
	}
}

// readModelDir loads the one model file of a folder, by its content (JSON, UBJSON or XGBoost's
// legacy binary format), with the trainer's metadata.json when there is one. A model file whose
// sha256 differs from the one metadata.json records is refused: the folder is half-replaced or
// damaged.
func readModelDir(dir string) (*forest.Model, string, *modeldir.Metadata, error) {
	file, err := modeldir.FindModelFile(dir)
	if err != nil {
		return nil, "", nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, file, nil, fmt.Errorf("load model %s: %w", file, err)
	}
	f, err := forest.Parse(data)
	if err != nil {
		return nil, file, nil, fmt.Errorf("load model %s: %w", file, err)
	}
	mdPath := filepath.Join(dir, modeldir.MetadataFile)
	meta, err := modeldir.ReadMetadata(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return f, file, nil, nil
	}
	if err != nil {
		return nil, file, nil, err
	}
	if meta.ModelSHA256 != "" && meta.ModelFile == filepath.Base(file) {
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != meta.ModelSHA256 {
			return nil, file, nil, fmt.Errorf("%s has sha256 %s but %s records %s: the model folder is damaged or half-replaced",
				file, hex.EncodeToString(sum[:]), mdPath, meta.ModelSHA256)
		}
	}
	if len(meta.Classes) > 0 && f.NumGroups() > 1 && len(meta.Classes) != f.NumGroups() {
		return nil, file, nil, fmt.Errorf("%s lists %d classes but %s has %d output groups", mdPath, len(meta.Classes), file, f.NumGroups())
	}
	return f, file, meta, nil
}

// Registry is the set of models in a model directory.
type Registry struct {
	opts Options
	// models is fixed once Discover returns (loading and unloading change a Model, not
	// the set), so it is read without a lock: a request's lookup takes no atomics.
	models map[string]*Model
}

// Open finds the models under dir (see Discover) and loads them (see LoadAll).
func Open(dir, name, version string, opts Options) (*Registry, error) {
	r, err := Discover(dir, name, version, opts)
	if err != nil {
		return nil, err
	}
	r.LoadAll()
	return r, nil
}

// Discover finds the models under dir without loading them; each reports "still loading" until
// LoadAll. A folder that itself holds a model file is one model named name (how KServe mounts a
// single model at /mnt/models); otherwise every sub-folder holding a model file is a model named
// after the folder. A server discovers first and loads while it already answers probes, so
// liveness holds during a long load and readiness says what is happening.
func Discover(dir, name, version string, opts Options) (*Registry, error) {
	r := &Registry{opts: opts, models: map[string]*Model{}}
	add := func(name, version, dir string) {
		r.models[name] = &Model{Name: name, Version: version, Dir: dir, opts: &r.opts}
	}
	if modeldir.HoldsModel(dir) || !isDir(dir) {
		add(name, version, dir)
		return r, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read model directory %s: %w", dir, err)
	}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && modeldir.HoldsModel(sub) {
			add(e.Name(), "", sub)
		}
	}
	if len(r.models) == 0 {
		// Keep the configured name visible as not ready, naming what is missing.
		add(name, version, dir)
	}
	return r, nil
}

// LoadAll loads every model concurrently. Failures are kept as each model's not-ready reason
// rather than returned, so the server stays up and reports them.
func (r *Registry) LoadAll() {
	models := make([]*Model, 0, len(r.models))
	for _, m := range r.models {
		models = append(models, m)
	}
	var wg sync.WaitGroup
	for _, m := range models {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.load() }()
	}
	wg.Wait()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Get returns the model name at version ("" = any).
func (r *Registry) Get(name, version string) (*Model, error) {
	m, ok := r.models[name]
	if !ok {
		return nil, v2.Errorf(v2.KindModelNotFound, "model %s not found; this server has %v", name, r.Names())
	}
	if version != "" && version != m.Version {
		if m.Version == "" {
			return nil, v2.Errorf(v2.KindModelNotFound, "model %s version %s not found: the model is not versioned", name, version)
		}
		return nil, v2.Errorf(v2.KindModelNotFound, "model %s version %s not found; available version: %s", name, version, m.Version)
	}
	return m, nil
}

// Has reports whether a model of that name is served (loaded or not).
func (r *Registry) Has(name string) bool {
	_, ok := r.models[name]
	return ok
}

// Names lists the models, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.models))
	for n := range r.models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Ready reports whether every model is ready, with the first reason one is not.
func (r *Registry) Ready() (bool, error) {
	for _, n := range r.Names() {
		m, _ := r.Get(n, "")
		if ok, err := m.Ready(); !ok {
			return false, err
		}
	}
	return len(r.Names()) > 0, nil
}

// Load (re)loads a model from its folder: the repository extension's load. When the reload
// fails and an older version is serving, that version keeps serving and the error says so.
func (r *Registry) Load(name string) error {
	m, err := r.Get(name, "")
	if err != nil {
		return err
	}
	if err := m.load(); err != nil {
		if st := m.Status(); st.Ready {
			return v2.Errorf(v2.KindNotReady, "load model %s: %v; still serving %s loaded at %s", name, err, st.File, st.LoadedAt.UTC().Format(time.RFC3339))
		}
		return v2.Errorf(v2.KindNotReady, "load model %s: %v", name, err)
	}
	return nil
}

// Unload releases a model; it stays listed, not ready, until loaded again.
func (r *Registry) Unload(name string) error {
	m, err := r.Get(name, "")
	if err != nil {
		return err
	}
	m.unload()
	return nil
}
