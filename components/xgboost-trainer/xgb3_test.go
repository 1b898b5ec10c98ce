package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/parquet-go/parquet-go"
)

// A 3-rank gang trains the models XGBoost 2.0 brought (vector-leaf multi-target trees, two
// quantiles in one model), and the runtime's evaluator answers on the model file what libxgboost
// 3.0 answers on the same file.
func TestGangModelsOfXGBoost3ServeAsLibxgboost(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "train.csv")
	writeCSV(t, csv, 3000, 6, 5)
	catCSV := filepath.Join(dir, "categorical.csv")
	writeCategoricalCSV(t, catCSV, 3000)
	catParquet := filepath.Join(dir, "categorical-parquet")
	writeCategoricalParquet(t, catParquet, 4, 700)
	cases := []struct {
		name       string
		args       []string
		outputs    int // values per row
		types      []string
		categories map[string][]string // metadata.json's
	}{
		{"categorical", []string{"--train", catCSV, "--label", "y", "--objective", "binary:logistic", "--categorical", "color",
			"--param", "max_cat_to_onehot=1"}, 1, []string{"q", "c", "q"}, nil},
		// Category names in a Parquet string column, read in shares: each rank numbers the
		// names it read, and the gang agrees on one sorted list (part 0, read by a rank alone,
		// lacks two names).
		{"parquet_categories", []string{"--train", catParquet, "--label", "y", "--objective", "binary:logistic",
			"--param", "max_cat_to_onehot=1"}, 1, []string{"q", "c", "q"}, map[string][]string{"color": sortedColorNames()}},
		{"multi_output_tree", []string{"--dataset", "iris", "--objective", "multi:softprob", "--param", "multi_strategy=multi_output_tree"}, 3, nil, nil},
		{"quantiles", []string{"--train", csv, "--label", "y", "--objective", "reg:quantileerror", "--param", "quantile_alpha=[0.1,0.9]"}, 2, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			modelDir := filepath.Join(dir, c.name)
			args := append([]string{"--local", "2", "--num-round", "15", "--max-depth", "4", "--nthread", "1", "--model-dir", modelDir}, c.args...)
			if out, err := exec.Command(trainerBin, args...).CombinedOutput(); err != nil {
				t.Fatalf("gangboost-train %v: %v\n%s", args, err, out)
			}
			md, err := modeldir.ReadMetadata(modelDir)
			if err != nil {
				t.Fatal(err)
			}
			if md.WorldSize != 3 {
				t.Fatalf("metadata: world size %d, want 3", md.WorldSize)
			}
			if !maps.EqualFunc(md.Categories, c.categories, slices.Equal) {
				t.Fatalf("metadata: categories %q, want %q", md.Categories, c.categories)
			}
			path := filepath.Join(modelDir, "model.json")
			if c.types != nil {
				if got := modelFeatureTypes(t, path); !slices.Equal(got, c.types) {
					t.Fatalf("the model's feature_types are %v, want %v", got, c.types)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !regexp.MustCompile(`"categories_nodes":\[[0-9]`).Match(b) {
					t.Fatal("no tree of the model splits on a set of categories")
				}
			}
			bst, err := xgb.LoadBooster(path)
			if err != nil {
				t.Fatal(err)
			}
			defer bst.Free()
			m, err := forest.Load(path)
			if err != nil {
				t.Fatalf("the runtime cannot load %s: %v", path, err)
			}
			if c.categories != nil {
				checkColorEffects(t, bst, md.Categories["color"])
			}
			const rows = 500
			feats := m.NumFeatures()
			r := rand.New(rand.NewSource(9))
			x := make([]float32, rows*feats)
			for i := range x {
				switch {
				case r.Intn(10) == 0:
					x[i] = float32(math.NaN())
				case c.types != nil && c.types[i%feats] == "c":
					x[i] = float32(r.Intn(8)) // codes seen in training and two beyond
				default:
					x[i] = float32(r.NormFloat64() * 2)
				}
			}
			want, _, err := bst.PredictDense(x, rows, feats, float32(math.NaN()), xgb.PredictOptions{Type: xgb.PredictValue})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Predict(nil, x, rows, forest.OutputDefault)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != rows*c.outputs || len(got) != len(want) {
				t.Fatalf("libxgboost gives %d values, the runtime %d; want %d rows x %d", len(want), len(got), rows, c.outputs)
			}
			exact, maxAbs := 0, 0.0
			for i := range want {
				d := math.Abs(float64(got[i]) - float64(want[i]))
				if d == 0 {
					exact++
				}
				maxAbs = max(maxAbs, d)
			}
			// float32 sums of the same leaves in another order may differ in the last bit (the
			// parity zoo's bound, runtime/forest/parity).
			if maxAbs > 1e-6 {
				t.Fatalf("the runtime differs from libxgboost %s by up to %g (%d of %d values exact)", xgb.Version(), maxAbs, exact, len(want))
			}
			t.Logf("%d of %d values exact, max |d| %.2g", exact, len(want), maxAbs)
		})
	}
}

// writeCategoricalCSV writes n rows of a numeric x0, a categorical color (codes 0..5, whose effect
// on y no threshold on the code can capture) and a numeric x1.
func writeCategoricalCSV(t *testing.T, path string, n int) {
	t.Helper()
	r := rand.New(rand.NewSource(3))
	effect := []float64{1.5, -2, 0.5, -1, 2, -0.5}
	var b strings.Builder
	b.WriteString("x0,color,x1,y\n")
	for range n {
		x0, color, x1 := r.NormFloat64(), r.Intn(len(effect)), r.NormFloat64()
		y := 0
		if x0+effect[color]+0.5*x1+0.3*r.NormFloat64() > 0 {
			y = 1
		}
		fmt.Fprintf(&b, "%.4f,%d,%.4f,%d\n", x0, color, x1, y)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkColorEffects checks that the model learned each color's effect under the code metadata.json
// gives it: with x0 = x1 = 0, the colors rank by their effect (colors whose effect alone decides y
// may tie near 0 or 1). Ranks that numbered the names differently would have trained on mixed-up
// codes.
func checkColorEffects(t *testing.T, bst *xgb.Booster, names []string) {
	t.Helper()
	x := make([]float32, 0, 3*len(names))
	for code := range names {
		x = append(x, 0, float32(code), 0)
	}
	p, _, err := bst.PredictDense(x, len(names), 3, float32(math.NaN()), xgb.PredictOptions{Type: xgb.PredictValue})
	if err != nil {
		t.Fatal(err)
	}
	byEffect := slices.SortedFunc(slices.Values(names), func(a, b string) int { return cmp.Compare(colorNames[a], colorNames[b]) })
	for i := 1; i < len(byEffect); i++ {
		lo, hi := slices.Index(names, byEffect[i-1]), slices.Index(names, byEffect[i])
		if p[lo] > p[hi] || colorNames[byEffect[i-1]] < 0 && colorNames[byEffect[i]] > 0 && p[lo] >= p[hi] {
			t.Fatalf("P(y) for %s (effect %g) is %.3f, for %s (effect %g) %.3f: want the larger effect to give a P(y) at least as large (larger across 0); the codes do not mean what metadata.json says (all: %v for %q)",
				byEffect[i-1], colorNames[byEffect[i-1]], p[lo], byEffect[i], colorNames[byEffect[i]], p[hi], p, names)
		}
	}
}

// colorNames name the categories of writeCategoricalParquet's color column, with their effect.
var colorNames = map[string]float64{"red": 1.5, "green": -2, "blue": 0.5, "amber": -1, "violet": 2, "cyan": -0.5}

func sortedColorNames() []string { return slices.Sorted(maps.Keys(colorNames)) }

// writeCategoricalParquet writes parts Parquet files of n rows each into dir: numeric x0 and x1,
// color naming a category (dictionary-encoded strings, as pandas writes its category dtype) and
// the label y. Part 0 is the largest (n+300 rows: a rank reads it alone) and never names "red" or
// "violet".
func writeCategoricalParquet(t *testing.T, dir string, parts, n int) {
	t.Helper()
	type row struct {
		X0    float64 `parquet:"x0"`
		Color string  `parquet:"color,dict"`
		X1    float64 `parquet:"x1"`
		Y     int64   `parquet:"y"`
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(5))
	names := sortedColorNames()
	for p := range parts {
		rows := make([]row, n)
		if p == 0 {
			rows = make([]row, n+300)
		}
		for i := range rows {
			name := names[r.Intn(len(names))]
			for p == 0 && (name == "violet" || name == "red") {
				name = names[r.Intn(len(names))]
			}
			x0, x1 := r.NormFloat64(), r.NormFloat64()
			rows[i] = row{X0: x0, Color: name, X1: x1}
			if x0+colorNames[name]+0.5*x1+0.3*r.NormFloat64() > 0 {
				rows[i].Y = 1
			}
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.parquet", p)))
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[row](f)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// modelFeatureTypes is the feature_types a JSON model file records. The file is not read whole
// as JSON: libxgboost writes NaN (not JSON) in the split_conditions of categorical splits.
func modelFeatureTypes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"feature_types":(\[[^\]]*\])`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no feature_types", path)
	}
	var types []string
	if err := json.Unmarshal(m[1], &types); err != nil {
		t.Fatal(err)
	}
	return types
}

// A categorical column that holds anything but category codes, or names no feature, fails the
// run with the column, the value and what to do.
func TestCategoricalColumnMustHoldCodes(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(csv, []byte("x0,color,y\n0.5,1,1\n-0.5,2.5,0\n0.1,0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ categorical, want string }{
		{"color", "categorical feature color: row 2 of this rank's data holds 2.5; want category codes, integers from 0"},
		{"colour", `--categorical colour: no feature column \"colour\" (the features: x0, color)`},
	} {
		out, err := exec.Command(trainerBin, "--train", csv, "--label", "y", "--objective", "binary:logistic", "--num-round", "2",
			"--categorical", c.categorical, "--model-dir", filepath.Join(dir, "m")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("--categorical %s: %v, want the error %q:\n%s", c.categorical, err, c.want, out)
		}
	}
}
