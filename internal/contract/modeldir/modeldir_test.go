package modeldir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entries lists a folder's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestPublish(t *testing.T) {
	realExchange := exchangeNames
	cases := []struct {
		name     string
		existing map[string]string // files of a folder already at the target (a re-run), or nil
		exchange func(a, b string) error
	}{
		{name: "new folder"},
		{name: "empty folder already there", existing: map[string]string{}},
		{name: "re-run swaps atomically", existing: map[string]string{"model.ubj": "old", MetadataFile: "{}"}, exchange: realExchange},
		{name: "re-run where the filesystem cannot exchange", existing: map[string]string{"model.json": "old", MetadataFile: "{}"},
			exchange: func(a, b string) error { return errExchangeUnsupported }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.exchange != nil {
				exchangeNames = c.exchange
				t.Cleanup(func() { exchangeNames = realExchange })
			}
			parent := filepath.Join(t.TempDir(), "models", "m")
			dir := filepath.Join(parent, "1")
			if c.existing != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, body := range c.existing {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			model := []byte(`{"learner":{}}`)
			md := &Metadata{Objective: "binary:logistic", NumFeatures: 2}
			if err := Publish(dir, ModelFileName(FormatJSON), model, md, true); err != nil {
				t.Fatal(err)
			}
			if got := entries(t, dir); !slices.Equal(got, []string{MetadataFile, "model.json"}) {
				t.Fatalf("model folder holds %v, want exactly metadata.json and model.json", got)
			}
			if got := entries(t, parent); !slices.Equal(got, []string{"1"}) {
				t.Fatalf("beside the model folder: %v, want no temporary or old folders", got)
			}
			st, err := os.Stat(dir)
			if err != nil || st.Mode().Perm() != 0o755 {
				t.Fatalf("model folder mode %v (%v), want 0755 so the runtime's user can read it", st.Mode(), err)
			}
			got, err := ReadMetadata(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.ModelFile != "model.json" || got.ModelSHA256 != sha(model) || got.Objective != "binary:logistic" {
				t.Fatalf("metadata = %+v", got)
			}
			b, err := os.ReadFile(filepath.Join(dir, "model.json"))
			if err != nil || string(b) != string(model) {
				t.Fatalf("model.json = %q, %v", b, err)
			}
		})
	}
}

// A write that fails (a full disk) leaves no trace: no new folder, and a re-run's failure leaves
// the version that was there untouched.
func TestPublishFailureLeavesNoModel(t *testing.T) {
	realWrite := writeFile
	t.Cleanup(func() { writeFile = realWrite })
	for _, failing := range []string{"model.json", MetadataFile} {
		for _, existing := range []bool{false, true} {
			t.Run(failing+map[bool]string{false: " new", true: " re-run"}[existing], func(t *testing.T) {
				writeFile = func(path string, data []byte) error {
					if filepath.Base(path) == failing {
						// Half the bytes reach the disk, then it is full.
						_ = os.WriteFile(path, data[:len(data)/2], 0o644)
						return errors.New("write " + path + ": no space left on device")
					}
					return realWrite(path, data)
				}
				parent := t.TempDir()
				dir := filepath.Join(parent, "v1")
				if existing {
					if err := os.Mkdir(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "model.json"), []byte("previous"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				err := Publish(dir, "model.json", []byte(`{"learner":{}}`), &Metadata{Objective: "reg:squarederror"}, true)
				if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err = %v, want the write failure naming the folder", err)
				}
				if !existing {
					if got := entries(t, parent); len(got) != 0 {
						t.Fatalf("a failed publish left %v", got)
					}
					return
				}
				if got := entries(t, parent); !slices.Equal(got, []string{"v1"}) {
					t.Fatalf("a failed publish left %v beside the folder", got)
				}
				if got := entries(t, dir); !slices.Equal(got, []string{"model.json"}) {
					t.Fatalf("the previous folder now holds %v", got)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "model.json")); string(b) != "previous" {
					t.Fatalf("the previous model was replaced by %q", b)
				}
			})
		}
	}
}

func TestPublishRejects(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, modelFile, want string }{
		{file, "model.json", "is not a folder"},
		{filepath.Join(parent, "v"), "../model.json", "plain name"},
		{filepath.Join(parent, "v"), MetadataFile, "plain name"},
	}
	for _, c := range cases {
		err := Publish(c.dir, c.modelFile, []byte("{}"), &Metadata{}, true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Publish(%s, %s) = %v, want %q", c.dir, c.modelFile, err, c.want)
		}
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"file"}) {
		t.Fatalf("rejected publishes left %v", got)
	}
}

// metadata.json's field names are read by the runtime and the pipeline components.
func TestMetadataJSONNames(t *testing.T) {
	score := 0.5
	b, err := json.Marshal(Metadata{FeatureNames: []string{"a"}, Label: "y", Classes: []string{"x"}, NumClass: 2, BestScore: &score})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"best_iteration", "best_score", "classes", "feature_names", "label", "metrics", "model_file", "model_sha256",
		"num_class", "num_features", "objective", "params", "rounds", "train_rows", "world_size", "xgboost_version"}
	if !slices.Equal(keys, want) {
		t.Fatalf("metadata.json keys %v, want %v", keys, want)
	}
}

// Publishing at a folder that is not a model folder is refused with nothing written or deleted:
// models/ itself (model_version ".."), a model's folder of versions (model_version "."), the
// claim's parent (a trainer pod's --model-dir /mnt/pvc/..), a working folder holding other files.
func TestPublishRefusesWhatIsNotAModelFolder(t *testing.T) {
	cases := []struct {
		name  string
		files []string // under the destination; a trailing / makes a folder
		want  string
	}{
		{"models/ itself", []string{"iris/v1/model.json", "iris/v1/metadata.json", "other/v3/model.json"}, "it holds iris/, other/"},
		{"a model's versions", []string{"v1/model.json", "v2/model.ubj"}, "it holds v1/, v2/"},
		{"the claim's parent", []string{"pvc/datasets/iris/train.csv"}, "it holds pvc/"},
		{"a working folder", []string{"model.json", "metadata.json", "bench.log", "notes.txt"}, "it holds bench.log, notes.txt"},
		{"another model file", []string{"model.bst"}, "it holds model.bst"},
		{"a hidden file", []string{"model.json", ".keep"}, "it holds .keep"},
		{"many names", []string{"a", "b", "c", "d", "e", "f", "g"}, "a, b, c, d, e, and 2 more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "dest")
			for _, f := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, dir)
			err := Publish(dir, "model.json", []byte(`{"learner":{}}`), &Metadata{Objective: "reg:squarederror"}, true)
			if err == nil || !strings.Contains(err.Error(), "is not a model folder") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, c.want)
			}
			if after := tree(t, dir); !slices.Equal(before, after) {
				t.Fatalf("the folder changed: %v, was %v", after, before)
			}
			if got := entries(t, parent); !slices.Equal(got, []string{"dest"}) {
				t.Fatalf("beside the folder: %v, want nothing written", got)
			}
		})
	}
	// A link to a folder is not a folder of its own.
	parent := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(parent, "v1")); err != nil {
		t.Fatal(err)
	}
	if err := Publish(filepath.Join(parent, "v1"), "model.json", []byte("{}"), &Metadata{}, true); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Fatalf("publishing over a symlink: %v", err)
	}
}

// tree lists every path under dir with its content, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel += "=" + string(b)
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
