// Package registry holds the models a runtime serves: it finds model files in the model
// directory, loads them with the pure-Go evaluator, and tracks whether each is ready, and if not,
// why (the message names the file).
package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/gangboost/gangboost/internal/forest"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// modelFiles are the file names a model folder may hold, in order of preference: XGBoost's own
// save_model formats. Pickles and the legacy binary format are never loaded.
var modelFiles = []string{"model.json", "model.ubj"}

// Metadata is the part of the trainer's metadata.json the runtime uses.
type Metadata struct {
	Objective    string   `json:"objective"`
	FeatureNames []string `json:"feature_names"`
	Classes      []string `json:"classes"`
	ModelSHA256  string   `json:"model_sha256"`
}

// Model is one served model.
type Model struct {
	Name    string
	Version string // "" when the model is not versioned
	Dir     string

	mu       sync.RWMutex
	forest   *forest.Model
	meta     *Metadata
	file     string
	loadErr  error
	loadedAt time.Time
	unloaded bool
}

// Ready reports whether the model can serve, and if not, why.
func (m *Model) Ready() (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.unloaded:
		return false, v2.Errorf(v2.KindNotReady, "model %s is unloaded; load it with POST /v2/repository/models/%s/load", m.Name, m.Name)
	case m.loadErr != nil:
		return false, v2.Errorf(v2.KindNotReady, "model %s is not ready: %v", m.Name, m.loadErr)
	case m.forest == nil:
		return false, v2.Errorf(v2.KindNotReady, "model %s is still loading", m.Name)
	}
	return true, nil
}

// Forest returns the loaded evaluator, or a not-ready error.
func (m *Model) Forest() (*forest.Model, error) {
	if ok, err := m.Ready(); !ok {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.forest, nil
}

// Metadata returns the trainer's metadata, if the folder had one.
func (m *Model) Metadata() *Metadata {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.meta
}

// load (re)reads the model folder. A failure leaves the model not ready with the reason.
func (m *Model) load() error {
	f, file, meta, err := readModelDir(m.Dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unloaded = false
	m.file = file
	if err != nil {
		m.loadErr, m.forest = err, nil
		return err
	}
	m.forest, m.meta, m.loadErr, m.loadedAt = f, meta, nil, time.Now()
	return nil
}

func readModelDir(dir string) (*forest.Model, string, *Metadata, error) {
	var file string
	for _, name := range modelFiles {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			file = p
			break
		}
	}
	if file == "" {
		return nil, "", nil, fmt.Errorf("no model file in %s: want one of %v (XGBoost save_model JSON or UBJSON)", dir, modelFiles)
	}
	f, err := forest.Load(file)
	if err != nil {
		return nil, file, nil, err
	}
	var meta *Metadata
	mdPath := filepath.Join(dir, "metadata.json")
	if b, err := os.ReadFile(mdPath); err == nil {
		meta = &Metadata{}
		if err := json.Unmarshal(b, meta); err != nil {
			return nil, file, nil, fmt.Errorf("read %s: %w", mdPath, err)
		}
		if len(meta.Classes) > 0 && f.NumGroups() > 1 && len(meta.Classes) != f.NumGroups() {
			return nil, file, nil, fmt.Errorf("%s lists %d classes but %s has %d output groups", mdPath, len(meta.Classes), file, f.NumGroups())
		}
	}
	return f, file, meta, nil
}

// Registry is the set of models in a model directory.
type Registry struct {
	mu     sync.RWMutex
	models map[string]*Model
}

// Open finds the models under dir (see Discover) and loads them (see LoadAll).
func Open(dir, name, version string) (*Registry, error) {
	r, err := Discover(dir, name, version)
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
func Discover(dir, name, version string) (*Registry, error) {
	r := &Registry{models: map[string]*Model{}}
	if hasModelFile(dir) || !isDir(dir) {
		r.models[name] = &Model{Name: name, Version: version, Dir: dir}
		return r, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read model directory %s: %w", dir, err)
	}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && hasModelFile(sub) {
			r.models[e.Name()] = &Model{Name: e.Name(), Dir: sub}
		}
	}
	if len(r.models) == 0 {
		// Keep the configured name visible as not ready, naming what is missing.
		r.models[name] = &Model{Name: name, Version: version, Dir: dir}
	}
	return r, nil
}

// LoadAll loads every model concurrently. Failures are kept as each model's not-ready reason
// rather than returned, so the server stays up and reports them.
func (r *Registry) LoadAll() {
	r.mu.RLock()
	models := make([]*Model, 0, len(r.models))
	for _, m := range r.models {
		models = append(models, m)
	}
	r.mu.RUnlock()
	var wg sync.WaitGroup
	for _, m := range models {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.load() }()
	}
	wg.Wait()
}

func hasModelFile(dir string) bool {
	for _, name := range modelFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Get returns the model name at version ("" = any).
func (r *Registry) Get(name, version string) (*Model, error) {
	r.mu.RLock()
	m, ok := r.models[name]
	r.mu.RUnlock()
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

// Names lists the models, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
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

// Load (re)loads a model from its folder: the repository extension's load.
func (r *Registry) Load(name string) error {
	m, err := r.Get(name, "")
	if err != nil {
		return err
	}
	if err := m.load(); err != nil {
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
	m.mu.Lock()
	m.unloaded, m.forest = true, nil
	m.mu.Unlock()
	return nil
}
