package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyIris copies the committed Iris model folder (runtime/testdata) to a temporary folder.
func copyIris(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "runtime", "testdata", "models", "iris")
	dst := t.TempDir()
	for _, f := range []string{"model.json", "metadata.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestCheckModelFolder(t *testing.T) {
	dir := copyIris(t)
	if md, err := CheckModelFolder(dir); err != nil || md.NumFeatures != 4 {
		t.Fatalf("the committed Iris folder: %+v, %v; want it accepted", md, err)
	}
	edit := func(file, old, new string) string {
		t.Helper()
		d := copyIris(t)
		p := filepath.Join(d, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s lacks %q", file, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		name, dir, want string
	}{
		// One byte of the model changed, still valid JSON: only the checksum tells.
		{"model changed", edit("model.json", `"num_feature":"4"`, `"num_feature":"5"`), "metadata.json records"},
		{"model truncated", func() string {
			d := copyIris(t)
			if err := os.Truncate(filepath.Join(d, "model.json"), 100); err != nil {
				t.Fatal(err)
			}
			return d
		}(), "does not load"},
		{"metadata names another file", edit("metadata.json", `"model_file": "model.json"`, `"model_file": "model.ubj"`), "model.ubj"},
		{"metadata without checksum", edit("metadata.json", `"model_sha256": "`, `"model_sha256_": "`), `metadata.json records ""`},
		{"features disagree", edit("metadata.json", `"num_features": 4`, `"num_features": 3`), "has 4 features, metadata.json says 3"},
	} {
		if _, err := CheckModelFolder(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
