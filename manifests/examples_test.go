package manifests

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the checkout this package lives in.
const repoRoot = ".."

// fencedYAML matches a fenced code block marked yaml or yml in Markdown.
var fencedYAML = regexp.MustCompile("(?ms)^[ \t]*```ya?ml[ \t]*\n(.*?)^[ \t]*```")

// exampleYAML returns the YAML a repository file shows: all of a .yaml file under manifests/, the
// yaml blocks of a Markdown file or of a notebook's cells.
func exampleYAML(path string, data []byte) ([]string, error) {
	switch {
	case strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml"):
		return []string{string(data)}, nil
	case strings.HasSuffix(path, ".ipynb"):
		var nb struct {
			Cells []struct {
				Source any `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &nb); err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, c := range nb.Cells {
			switch src := c.Source.(type) {
			case string:
				b.WriteString(src + "\n")
			case []any:
				for _, l := range src {
					fmt.Fprint(&b, l)
				}
				b.WriteString("\n")
			}
		}
		data = []byte(b.String())
	}
	var out []string
	for _, m := range fencedYAML.FindAllSubmatch(data, -1) {
		out = append(out, string(m[1]))
	}
	return out, nil
}

// checkNamesRuntime returns an error for each InferenceService in a YAML text (one or more
// documents) that does not name a gangboost runtime in spec.predictor.model.runtime, and how
// many InferenceServices it holds.
func checkNamesRuntime(text string) (int, []error) {
	docs, err := YAMLDocs([]byte(text))
	if err != nil {
		return 0, []error{err}
	}
	n, errs := 0, []error(nil)
	for _, doc := range docs {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Predictor struct {
					Model *struct {
						Runtime string `json:"runtime"`
					} `json:"model"`
				} `json:"predictor"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil || obj.Kind != "InferenceService" {
			continue // a fragment of some other kind, not an InferenceService
		}
		n++
		switch m := obj.Spec.Predictor.Model; {
		case m == nil:
			errs = append(errs, fmt.Errorf("InferenceService %q: no spec.predictor.model", obj.Metadata.Name))
		case !slices.Contains(gangboostRuntimes, m.Runtime):
			errs = append(errs, fmt.Errorf("InferenceService %q: spec.predictor.model.runtime %q, want one of %v: the gangboost runtimes are not auto-selected, so one that does not name them is not served by gangboost",
				obj.Metadata.Name, m.Runtime, gangboostRuntimes))
		}
	}
	return n, errs
}

// TestExamplesNameTheRuntime finds every InferenceService the repository shows (manifests/ with its
// subfolders, Markdown and notebooks) and requires each to name a gangboost runtime: they are
// opt-in (autoSelect false), so an example without the name would get KServe's own runtime or none.
func TestExamplesNameTheRuntime(t *testing.T) {
	total := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bin", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(repoRoot, path)
		isManifest := strings.HasPrefix(rel, "manifests"+string(filepath.Separator)) && strings.HasSuffix(rel, ".yaml")
		if !isManifest && !strings.HasSuffix(rel, ".md") && !strings.HasSuffix(rel, ".ipynb") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		texts, err := exampleYAML(rel, data)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		for _, text := range texts {
			n, errs := checkNamesRuntime(text)
			total += n
			for _, e := range errs {
				t.Errorf("%s: %v", rel, e)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// manifests/inferenceservice{,-grpc}.yaml and the deploy component's README at least.
	if total < 3 {
		t.Errorf("found %d InferenceServices in the repository's examples, want at least 3; the search is broken", total)
	}
	t.Logf("%d InferenceServices in the repository's examples name a gangboost runtime", total)
}

// The check can fail: an InferenceService naming only the format, in a Markdown block, is reported.
func TestCheckNamesRuntimeRejects(t *testing.T) {
	md := "text\n\n```yaml\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: iris}\n" +
		"spec:\n  predictor:\n    model:\n      modelFormat: {name: xgboost}\n      storageUri: pvc://m/models/iris/v1\n```\n"
	texts, err := exampleYAML("README.md", []byte(md))
	if err != nil || len(texts) != 1 {
		t.Fatalf("exampleYAML found %d blocks (err %v), want 1", len(texts), err)
	}
	n, errs := checkNamesRuntime(texts[0])
	if n != 1 || len(errs) != 1 || !strings.Contains(errs[0].Error(), `InferenceService "iris": spec.predictor.model.runtime ""`) {
		t.Errorf("checkNamesRuntime = %d, %v; want one InferenceService reported for its empty runtime", n, errs)
	}
}

// gangboostRuntimes names the runtimes of clusterservingruntime.yaml (test/kservetypes holds
// them to KServe's admission and runtime selection).
var gangboostRuntimes = []string{"gangboost-xgboost", "gangboost-xgboost-grpc"}
