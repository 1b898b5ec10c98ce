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
			if err := Publish(dir, ModelFileName(FormatJSON), model, md); err != nil {
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
				err := Publish(dir, "model.json", []byte(`{"learner":{}}`), &Metadata{Objective: "reg:squarederror"})
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
		err := Publish(c.dir, c.modelFile, []byte("{}"), &Metadata{})
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
