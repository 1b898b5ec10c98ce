package forest_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// The zoo (testdata/zoo, see its README.md) holds 37 models saved by XGBoost 3.4.1 and
// 2.1.4, each as model.json and model.ubj, with test rows and XGBoost's own outputs for
// them. Every model either loads and answers as XGBoost does, or is refused at load
// with an error naming what is not supported: a model that loads and answers
// differently is the failure this test exists to catch.

// zooRefused lists the models expected to fail at load, with a piece of the error that
// names the unsupported feature. A model leaving this table (newly supported) or
// joining it shows up as a test failure.
var zooRefused = map[string]string{}

// Tolerance for float outputs: |got-want| <= zooAbs + zooRel*|want|. The evaluator
// computes in float32 in XGBoost's order, so margins come out bit-identical (all
// 70,800 over both formats, linux/amd64) and predictions within one rounding of expf
// (6 of 67,200 differ, by at most 6e-8). Contributions sum the same terms in another
// order (leaf tables, shappath.go): 55% of 690,000 are bit-identical, the others
// differ by at most 7.2e-7 absolute, 5.1e-5 relative on values from 1e-3 up, near
// which terms cancel (4.8e-7 and 4.6e-5 while the tables held G(U) and Zout(U) was
// multiplied out per row). 1e-6 absolute covers that cancellation and 1e-5 relative (about 170
// float32 roundings) covers large values and platforms that round differently. A
// wrong feature (a tree weight, an intercept, a transform) moves values by 1e-2 or
// more. Leaf ids must be exact.
const (
	zooRel = 1e-5
	zooAbs = 1e-6
)

type zooMeta struct {
	Objective string            `json:"objective"`
	Booster   string            `json:"booster"`
	Shapes    map[string][]int  `json:"shapes"`
	Refused   map[string]string `json:"refused"`
}

// zooOutputs maps the reference files to the evaluator's outputs.
var zooOutputs = []struct {
	file string
	kind forest.OutputKind
}{
	{"pred", forest.OutputDefault},
	{"margin", forest.OutputMargin},
	{"leaf", forest.OutputLeaf},
	{"contribs", forest.OutputContribs},
}

func zooDirs(t *testing.T) []string {
	t.Helper()
	root := foresttest.Testdata(t, "zoo")
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "meta.json" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 74 {
		t.Fatalf("found %d models under %s, want 37 per version x 2 versions", len(dirs), root)
	}
	return dirs
}

func TestZoo(t *testing.T) {
	root := foresttest.Testdata(t, "zoo")
	var models, refusedLoads, loads, checked int
	for _, name := range zooDirs(t) {
		dir := filepath.Join(root, filepath.FromSlash(name))
		var meta zooMeta
		if b, err := os.ReadFile(filepath.Join(dir, "meta.json")); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s/meta.json: %v", name, err)
		}
		xa, err := foresttest.ReadNpy(filepath.Join(dir, "X.npy"))
		if err != nil {
			t.Fatal(err)
		}
		rows, nrows := xa.Float32(), xa.Shape[0]
		models++
		for _, file := range []string{"json/model.json", "ubj/model.ubj"} {
			t.Run(name+"/"+file, func(t *testing.T) {
				m, err := forest.Load(filepath.Join(dir, filepath.FromSlash(file)))
				if want, refused := zooRefused[name]; refused {
					if err == nil {
						t.Fatalf("loads, but the zoo table says it is refused (%q): if now supported, remove it from zooRefused", want)
					}
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("refused with %q, want an error containing %q", err, want)
					}
					refusedLoads++
					return
				}
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				loads++
				if m.Objective() != meta.Objective {
					t.Errorf("objective %q, meta.json says %q", m.Objective(), meta.Objective)
				}
				for _, o := range zooOutputs {
					ref, err := foresttest.ReadNpy(filepath.Join(dir, o.file+".npy"))
					if errors.Is(err, fs.ErrNotExist) {
						if _, ok := meta.Refused[o.file]; !ok {
							t.Errorf("%s.npy missing, and meta.json does not say XGBoost refused it", o.file)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					if _, err := m.Width(o.kind); err != nil {
						t.Errorf("%s: XGBoost gives it, the evaluator refuses: %v", o.file, err)
						continue
					}
					got, err := m.Predict(nil, rows, nrows, o.kind)
					if err != nil {
						t.Fatalf("%s: %v", o.file, err)
					}
					if err := zooCompare(got, ref, o.kind == forest.OutputLeaf); err != nil {
						t.Errorf("%s: %v", o.file, err)
						continue
					}
					checked++
				}
			})
		}
	}
	t.Logf("%d models: %d loads answered, %d refused at load, %d outputs matched", models, loads, refusedLoads, checked)
}

// zooCompare checks got against XGBoost's reference, exactly when exact is set (leaf
// ids), else within zooRel/zooAbs. The shapes agree when the element counts do: the
// evaluator's layout is XGBoost's row-major one.
func zooCompare(got []float32, ref *foresttest.Array, exact bool) error {
	return ref.Compare(got, exact, zooAbs, zooRel)
}
