package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/registry"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// models is the runtime's model folder fixture: iris (JSON, multi:softprob, 3 classes) and
// binary (UBJSON, binary:logistic), each with the trainer's metadata.json.
const models = "../testdata/models"

// irisRow is one iris flower (setosa).
var irisRow = []float32{5.1, 3.5, 1.4, 0.2}

// copyModels copies the named model folders of the fixture into a fresh directory, so a
// test may overwrite their files.
func copyModels(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range names {
		entries, err := os.ReadDir(filepath.Join(models, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(root, n), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(models, n, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, n, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// versions counts, through Options.NewPredictor, the versions loaded and released.
type versions struct {
	loaded, released atomic.Int64
}

// trackedPredictor is a loaded version's predictor that knows whether it was released.
type trackedPredictor struct {
	infer.Predictor
	released atomic.Bool
}

func (v *versions) options() registry.Options {
	return registry.Options{NewPredictor: func(f *forest.Model) (infer.Predictor, func()) {
		v.loaded.Add(1)
		p := &trackedPredictor{Predictor: f}
		return p, func() {
			if p.released.Swap(true) {
				panic("a version released twice")
			}
			v.released.Add(1)
		}
	}}
}

func predictProba(t *testing.T, l *registry.Loaded) []float32 {
	t.Helper()
	got, err := l.Predictor.PredictContext(context.Background(), nil, irisRow, 1, forest.OutputProba)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestOpenFindsEveryModelOfAFolder(t *testing.T) {
	var loads []string
	var mu sync.Mutex
	r, err := registry.Open(models, "unused", "", registry.Options{OnLoad: func(model, file string, err error) {
		mu.Lock()
		defer mu.Unlock()
		loads = append(loads, model+" "+filepath.Base(file))
		if err != nil {
			t.Errorf("load %s: %v", model, err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "binary,iris" {
		t.Fatalf("models %s, want binary,iris", got)
	}
	if ok, err := r.Ready(); !ok {
		t.Fatalf("registry not ready: %v", err)
	}
	if len(loads) != 2 {
		t.Fatalf("OnLoad told of %v, want both models", loads)
	}
	m, err := r.Get("iris", "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if filepath.Base(l.File) != "model.json" || l.Meta == nil || len(l.Meta.Classes) != 3 {
		t.Fatalf("iris loaded from %s with metadata %+v", l.File, l.Meta)
	}
	if got := strings.Join(l.FeatureNames(), ","); got != "sepal_length,sepal_width,petal_length,petal_width" {
		t.Fatalf("feature names %s", got)
	}
	if p := predictProba(t, l); len(p) != 3 || p[0] < 0.5 {
		t.Fatalf("setosa row: probabilities %v, want setosa first and likely", p)
	}
	bm, _ := r.Get("binary", "")
	if st := bm.Status(); !st.Ready || filepath.Base(st.File) != "model.ubj" {
		t.Fatalf("binary model status %+v", st)
	}
}

func TestSingleModelFolderTakesTheConfiguredName(t *testing.T) {
	r, err := registry.Open(filepath.Join(models, "iris"), "flowers", "3", registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "flowers" {
		t.Fatalf("models %s, want flowers", got)
	}
	if _, err := r.Get("flowers", "3"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, version, want string }{
		{"flowers", "4", "model flowers version 4 not found; available version: 3"},
		{"iris", "", "model iris not found; this server has [flowers]"},
	} {
		_, err := r.Get(tc.name, tc.version)
		if v2.KindOf(err) != v2.KindModelNotFound || err.Error() != tc.want {
			t.Errorf("Get(%q, %q): %v (kind %v), want model-not-found %q", tc.name, tc.version, err, v2.KindOf(err), tc.want)
		}
	}
}

// TestNotReadyNamesTheFile: a model whose first load fails stays listed and not ready, and the
// reason a client reads names the file and what is wrong with it.
func TestNotReadyNamesTheFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
		want  []string
	}{
		{"not a model", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "model.json"), "<html>")
		}, []string{"model iris is not ready", filepath.Join("iris", "model.json")}},
		{"sha256 differs from metadata.json", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "model.json"))
			write(t, filepath.Join(dir, "model.json"), string(b)+" ")
		}, []string{filepath.Join("iris", "model.json"), filepath.Join("iris", "metadata.json"), "damaged or half-replaced"}},
		{"no model file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "model.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"model iris is not ready", "iris"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyModels(t, "iris")
			dir := filepath.Join(root, "iris")
			tc.spoil(t, dir)
			r, err := registry.Open(dir, "iris", "", registry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := r.Get("iris", "")
			if err != nil {
				t.Fatal(err)
			}
			ok, err := m.Ready()
			if ok || v2.KindOf(err) != v2.KindNotReady {
				t.Fatalf("ready %v, error %v (kind %v); want not ready", ok, err, v2.KindOf(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("reason %q does not contain %q", err, w)
				}
			}
			if _, aerr := m.Acquire(); aerr == nil || aerr.Error() != err.Error() {
				t.Errorf("Acquire: %v, want the readiness reason", aerr)
			}
			if ok, rerr := r.Ready(); ok || rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("registry ready %v with %v, want the model's reason", ok, rerr)
			}
			if st := m.Status(); st.Ready || st.LastLoadError == "" || st.FailedAt.IsZero() {
				t.Errorf("status %+v, want the failure recorded", st)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFailedReloadKeepsTheServingVersion: a bad file pushed over a healthy model does not take
// it down; the reload's error says what still serves, and a good file later replaces it.
func TestFailedReloadKeepsTheServingVersion(t *testing.T) {
	root := copyModels(t, "iris")
	var v versions
	r, err := registry.Open(root, "unused", "", v.options())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Get("iris", "")
	before, err := m.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	before.Release()
	good, _ := os.ReadFile(filepath.Join(root, "iris", "model.json"))
	write(t, filepath.Join(root, "iris", "model.json"), `{"learner":`)

	err = r.Load("iris")
	if v2.KindOf(err) != v2.KindNotReady || !strings.Contains(err.Error(), "still serving "+before.File) ||
		!strings.Contains(err.Error(), "model.json") {
		t.Fatalf("reload of a broken file: %v; want not-ready naming the file and the version still serving", err)
	}
	if ok, err := m.Ready(); !ok {
		t.Fatalf("model not ready after a failed reload: %v", err)
	}
	l, err := m.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if l != before {
		t.Fatal("a failed reload replaced the serving version")
	}
	predictProba(t, l)
	l.Release()
	if st := m.Status(); !st.Ready || !strings.Contains(st.LastLoadError, "model.json") || !st.LoadedAt.Equal(before.LoadedAt) {
		t.Fatalf("status %+v, want the old version serving and the failure recorded", st)
	}
	if v.loaded.Load() != 1 || v.released.Load() != 0 {
		t.Fatalf("%d versions loaded, %d released; want the first one only, kept", v.loaded.Load(), v.released.Load())
	}

	write(t, filepath.Join(root, "iris", "model.json"), string(good))
	if err := r.Load("iris"); err != nil {
		t.Fatal(err)
	}
	after, err := m.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Release()
	if after == before || m.Status().LastLoadError != "" {
		t.Fatalf("a good reload kept the old version or the old failure: %+v", m.Status())
	}
	if v.released.Load() != 1 {
		t.Fatalf("%d versions released after the good reload, want the replaced one", v.released.Load())
	}
}

// TestRequestKeepsItsVersionAlive: a version unloaded or replaced while a request holds it is
// released when that request is done, not before; the request still evaluates with it.
func TestRequestKeepsItsVersionAlive(t *testing.T) {
	root := copyModels(t, "iris")
	var v versions
	r, err := registry.Open(root, "unused", "", v.options())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Get("iris", "")

	inFlight, err := m.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unload("iris"); err != nil {
		t.Fatal(err)
	}
	ok, err := m.Ready()
	if ok || v2.KindOf(err) != v2.KindNotReady || !strings.Contains(err.Error(), "unloaded") {
		t.Fatalf("after unload: ready %v, %v; want not ready, saying unloaded", ok, err)
	}
	if _, err := m.Acquire(); err == nil {
		t.Fatal("Acquire succeeded on an unloaded model")
	}
	if v.released.Load() != 0 {
		t.Fatal("the version was released while a request held it")
	}
	predictProba(t, inFlight)
	inFlight.Release()
	if v.released.Load() != 1 {
		t.Fatalf("%d releases after the request finished, want 1", v.released.Load())
	}

	// A reload while a request holds the old version: the new one serves at once, the old one
	// goes when its request does.
	if err := r.Load("iris"); err != nil {
		t.Fatal(err)
	}
	old, _ := m.Acquire()
	if err := r.Load("iris"); err != nil {
		t.Fatal(err)
	}
	cur, _ := m.Acquire()
	if cur == old {
		t.Fatal("reload did not swap in a new version")
	}
	if v.released.Load() != 1 {
		t.Fatal("the replaced version was released while a request held it")
	}
	old.Release()
	if v.released.Load() != 2 {
		t.Fatalf("%d releases after the old request finished, want 2", v.released.Load())
	}
	cur.Release()
	if v.released.Load() != 2 {
		t.Fatal("the serving version was released when a request gave it back")
	}
}

// TestReloadUnderRequests: requests acquiring and releasing on every core while the model is
// reloaded again and again; a request never gets a version already released, nor loses one
// while it holds it; every replaced version is released exactly once, the serving one never.
func TestReloadUnderRequests(t *testing.T) {
	root := copyModels(t, "iris")
	var v versions
	r, err := registry.Open(root, "unused", "", v.options())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Get("iris", "")
	const reloads = 20
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := m.Acquire()
				if err != nil {
					t.Error(err)
					return
				}
				p := l.Predictor.(*trackedPredictor)
				if p.released.Load() {
					t.Error("acquired a released version")
				}
				if _, err := p.PredictContext(context.Background(), nil, irisRow, 1, forest.OutputProba); err != nil {
					t.Error(err)
				}
				if p.released.Load() {
					t.Error("a version was released while a request held it")
				}
				l.Release()
			}
		}()
	}
	for range reloads {
		if err := r.Load("iris"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if v.loaded.Load() != reloads+1 || v.released.Load() != reloads {
		t.Fatalf("%d versions loaded, %d released; want %d and %d", v.loaded.Load(), v.released.Load(), reloads+1, reloads)
	}
	if err := r.Unload("iris"); err != nil {
		t.Fatal(err)
	}
	if v.released.Load() != reloads+1 {
		t.Fatalf("%d released after unload, want all %d", v.released.Load(), reloads+1)
	}
}
