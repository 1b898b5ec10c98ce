package prepare

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/test/testbin"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIrisSplit: the built-in Iris splits 40/10 per species, the files read back with the same
// class indices as the trainer's built-in Iris, schema.json says what they hold, and the same
// seed gives the same bytes while another seed gives another split.
func TestIrisSplit(t *testing.T) {
	claim := t.TempDir()
	res, err := Run(context.Background(), Options{Dataset: "iris", Name: "iris", TestFraction: 0.2, Seed: 42, Claim: claim})
	if err != nil {
		t.Fatal(err)
	}
	if res.TrainPath != "datasets/iris/train.csv" || res.TestPath != "datasets/iris/test.csv" {
		t.Errorf("paths = %s, %s", res.TrainPath, res.TestPath)
	}
	dir := filepath.Join(claim, "datasets", "iris")
	s, err := ReadSchema(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantClasses := []string{"setosa", "versicolor", "virginica"}
	if s.Label != "species" || s.LabelType != LabelString || !s.Stratified || !slices.Equal(s.Classes, wantClasses) ||
		s.Rows != 150 || s.TrainRows != 120 || s.TestRows != 30 || s.Source != "builtin:iris" {
		t.Errorf("schema = %+v", s)
	}
	for _, c := range wantClasses {
		if s.TrainClasses[c] != 40 || s.TestClasses[c] != 10 {
			t.Errorf("class %s: %d train, %d test rows; want 40 and 10", c, s.TrainClasses[c], s.TestClasses[c])
		}
	}
	if got := strings.Join(s.ColumnNames(), ","); got != "sepal_length,sepal_width,petal_length,petal_width,species" {
		t.Errorf("columns = %s", got)
	}
	builtin := dataset.Iris(dataset.Shard{})
	test, err := dataset.Load(dataset.Spec{Path: filepath.Join(dir, TestFile), Label: "species"}, dataset.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(test.Classes, builtin.Classes) || test.Rows != 30 {
		t.Errorf("test.csv reads back with classes %v and %d rows", test.Classes, test.Rows)
	}

	first := readFile(t, filepath.Join(dir, TrainFile))
	again := t.TempDir()
	if _, err := Run(context.Background(), Options{Dataset: "iris", Name: "iris", TestFraction: 0.2, Seed: 42, Claim: again}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, readFile(t, filepath.Join(again, "datasets", "iris", TrainFile))) {
		t.Error("the same seed wrote a different train.csv")
	}
	// A re-run with another seed replaces the folder.
	if _, err := Run(context.Background(), Options{Dataset: "iris", Name: "iris", TestFraction: 0.2, Seed: 7, Claim: claim}); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, readFile(t, filepath.Join(dir, TrainFile))) {
		t.Error("seed 7 wrote the same train.csv as seed 42")
	}
	entries, _ := os.ReadDir(filepath.Join(claim, "datasets"))
	if len(entries) != 1 {
		t.Errorf("datasets/ holds %d entries after a re-run, want only iris", len(entries))
	}
}

// syntheticCSV is n rows of three features and an integer class label 0..2 (class 2 rarer), with
// the label in the middle column.
func syntheticCSV(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString("x0,target,x1,x2\n")
	for i := 0; i < n; i++ {
		y := i % 5 % 3
		fmt.Fprintf(&b, "%.3f,%d,%.3f,%.3f\n", float64(y)+r.NormFloat64()*0.3, y, r.Float64(), r.NormFloat64())
	}
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	z := gzip.NewWriter(&out)
	z.Write(b)
	z.Close()
	return out.Bytes()
}

// TestCSVSources: a CSV on the claim, at an absolute path, and at an http(s) URL (plain and
// gzip) give the same split; integer class labels are stratified.
func TestCSVSources(t *testing.T) {
	data := syntheticCSV(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/data.csv":
			w.Write(data)
		case "/data.csv.gz":
			w.Write(gzipped(data))
		default:
			http.Error(w, "no such file", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	claim := t.TempDir()
	if err := os.MkdirAll(filepath.Join(claim, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "data.csv")
	for _, p := range []string{filepath.Join(claim, "raw", "data.csv"), abs} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []byte
	for _, src := range []string{"raw/data.csv", abs, srv.URL + "/data.csv", srv.URL + "/data.csv.gz"} {
		t.Run(src, func(t *testing.T) {
			res, err := Run(context.Background(), Options{Dataset: src, Name: "synthetic", Label: "target", TestFraction: 0.25, Seed: 3, Claim: claim})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Schema
			if s.LabelType != LabelInteger || !s.Stratified || !slices.Equal(s.Classes, []string{"0", "1", "2"}) || s.Source != src {
				t.Errorf("schema = %+v", s)
			}
			// Rows per class: 80, 80, 40; a quarter of each is held out.
			if s.TestClasses["0"] != 20 || s.TestClasses["1"] != 20 || s.TestClasses["2"] != 10 {
				t.Errorf("test rows per class = %v, want 20, 20, 10", s.TestClasses)
			}
			got := readFile(t, filepath.Join(claim, filepath.FromSlash(res.TestPath)))
			if !bytes.HasPrefix(got, []byte("x0,x1,x2,target\n")) {
				t.Errorf("test.csv starts %q, want the features then the label", got[:20])
			}
			if want == nil {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Errorf("%s gives another test.csv than the first source", src)
			}
		})
	}
}

// TestBadInput: bad data fails with the file as the user named it, the line and the column;
// nothing is written.
func TestBadInput(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	td, _ := filepath.Abs("testdata")
	cases := []struct {
		name, dataset, label string
		fraction             float64
		want                 string
	}{
		{"ragged row", td + "/ragged.csv", "y", 0.2, td + "/ragged.csv:4: expected 3 fields as in the header, got 2"},
		{"non-numeric feature", td + "/not_a_number.csv", "y", 0.2, td + `/not_a_number.csv:3: column 2 "b": "x" is not a number`},
		{"missing label column", td + "/no_label.csv", "y", 0.2, td + `/no_label.csv:1: no label column "y"; the columns are "a", "b", "c"`},
		{"empty file", td + "/empty.csv", "y", 0.2, td + "/empty.csv: the file is empty"},
		{"too few rows", td + "/one_row.csv", "y", 0.2, td + "/one_row.csv: 1 data rows with test_fraction 0.2 give 1 training and 0 test rows"},
		{"no label for a CSV", td + "/one_row.csv", "", 0.2, "no label column given"},
		{"iris with another label", "iris", "class", 0.2, `its label column is "species"`},
		{"fraction out of range", "iris", "", 1, "test_fraction = 1"},
		{"URL not found", srv.URL + "/missing.csv", "y", 0.2, srv.URL + "/missing.csv: GET answered 404 Not Found"},
		{"claim path leaving the claim", "../etc/data.csv", "y", 0.2, "may not leave the claim"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := t.TempDir()
			_, err := Run(context.Background(), Options{Dataset: tc.dataset, Name: "bad", Label: tc.label, TestFraction: tc.fraction, Seed: 1, Claim: claim})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if _, serr := os.Stat(filepath.Join(claim, "datasets", "bad")); serr == nil {
				t.Error("a failed run left datasets/bad")
			}
		})
	}
	for _, name := range []string{"../x", "..", ".", "", "a/b", "x\n"} {
		if _, err := Run(context.Background(), Options{Dataset: "iris", Name: name, TestFraction: 0.2, Claim: t.TempDir()}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// A folder at datasets/<name> that holds more than a split is refused, not replaced: publishing
// swaps the whole folder out.
func TestForeignFolderKept(t *testing.T) {
	claim := t.TempDir()
	dir := filepath.Join(claim, "datasets", "iris")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raw.csv"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Dataset: "iris", Name: "iris", TestFraction: 0.2, Claim: claim})
	if err == nil || !strings.Contains(err.Error(), "is not a data set folder: it holds raw.csv") {
		t.Fatalf("err = %v, want a refusal naming raw.csv", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "raw.csv")); err != nil || string(b) != "keep" {
		t.Fatalf("raw.csv = %q, %v", b, err)
	}
}

// TestTrainerReadsSplit: the real gangboost-train trains on the written train.csv, evaluates on
// test.csv, and records the species as its classes in the trainer's own order.
func TestTrainerReadsSplit(t *testing.T) {
	train := filepath.Join(testbin.Dir(t), "gangboost-train")
	if _, err := os.Stat(train); err != nil {
		t.Fatalf("%v: run make build (or go build -o bin/gangboost-train ./components/xgboost-trainer)", err)
	}
	claim := t.TempDir()
	res, err := Run(context.Background(), Options{Dataset: "iris", Name: "iris", TestFraction: 0.2, Seed: 42, Claim: claim})
	if err != nil {
		t.Fatal(err)
	}
	modelDir := filepath.Join(claim, "models", "iris", "v1")
	cmd := exec.Command(train, "--train", filepath.Join(claim, res.TrainPath), "--eval", filepath.Join(claim, res.TestPath),
		"--label", res.Schema.Label, "--objective", "multi:softprob", "--num-round", "10", "--eval-metric", "merror,mlogloss",
		"--nthread", "1", "--model-dir", modelDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gangboost-train: %v\n%s", err, out)
	}
	md, err := modeldir.ReadMetadata(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(md.Classes, res.Schema.Classes) || md.NumClass != 3 || md.Label != "species" {
		t.Errorf("metadata: classes %v, num_class %d, label %q", md.Classes, md.NumClass, md.Label)
	}
	merror := md.Metrics["eval-merror"]
	if len(merror) != 10 || merror[9] > 0.15 {
		t.Errorf("eval-merror per round = %v, want 10 rounds ending at most 0.15", merror)
	}
}
