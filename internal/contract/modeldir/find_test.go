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
		{[]string{"metadata.json"}, "", []string{"no model file", "it is empty"}},
		{[]string{"notes.txt"}, "", []string{"it holds notes.txt"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		for _, f := range c.files {
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
