package modeldir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindModelFile(t *testing.T) {
	cases := []struct {
		files []string
		want  string // the file found, or "" for an error
		err   []string
	}{
		{[]string{"model.json", "metadata.json"}, "model.json", nil},
		{[]string{"model.bst"}, "model.bst", nil},
		{[]string{"xgb-final.MODEL", ".model.json.tmp-1", "README.md"}, "xgb-final.MODEL", nil},
		{[]string{"a.json", "b.ubj"}, "", []string{"2 model files", "a.json, b.ubj"}},
		{[]string{"model.pkl"}, "", []string{"model.pkl is a Python pickle", "save_model"}},
		{[]string{"model.joblib", "model.json"}, "model.json", nil},
		{[]string{"metadata.json"}, "", []string{"no model file", "it holds metadata.json but no model file: copy the model file next to metadata.json"}},
		{[]string{"metadata.json", "notes.txt"}, "", []string{"it holds metadata.json, notes.txt but no model file"}},
		{[]string{"notes.txt"}, "", []string{"it holds notes.txt"}},
		{[]string{".model.json.tmp-1"}, "", []string{"it holds .model.json.tmp-1"}},
		{[]string{"v1/model.json"}, "", []string{"it holds v1/"}},
		{nil, "", []string{"it is empty"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		for _, f := range c.files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := FindModelFile(dir)
		if c.want != "" {
			if err != nil || got != filepath.Join(dir, c.want) {
				t.Errorf("%v: %q, %v; want %s", c.files, got, err, c.want)
			}
			if !HoldsModel(dir) {
				t.Errorf("%v: HoldsModel false", c.files)
			}
			continue
		}
		for _, w := range c.err {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err = %v, want it to say %q", c.files, err, w)
			}
		}
		if len(c.files) > 0 && err != nil && strings.Contains(err.Error(), "is empty") {
			t.Errorf("%v: err = %v, but the folder is not empty", c.files, err)
		}
	}
	// A folder of model folders is a repository, not a model.
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "iris"), 0o755); err != nil {
		t.Fatal(err)
	}
	if HoldsModel(repo) {
		t.Error("a folder holding only a sub-folder holds a model")
	}
}

// A published model folder whose model file went missing (deleted, or only metadata.json copied)
// is named, and the error says which file its metadata.json is for, rather than calling the
// folder empty.
func TestFindModelFileMetadataWithoutModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "iris", "v1")
	if err := Publish(dir, ModelFileName(FormatJSON), []byte(`{"learner":{}}`), &Metadata{Rounds: 20}, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "model.json")); err != nil {
		t.Fatal(err)
	}
	_, err := FindModelFile(dir)
	if err == nil {
		t.Fatalf("FindModelFile(%s) found a model in a folder holding only metadata.json", dir)
	}
	for _, w := range []string{"no model file in " + dir + ":", "it holds metadata.json but no model file (its metadata.json is for model.json)", "copy the model file next to metadata.json, or train the model again"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "is empty") {
		t.Errorf("err = %v: the folder is not empty", err)
	}
}
