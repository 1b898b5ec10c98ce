//go:build cgo

package parity_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// saveLegacy has libxgboost write b in its binary format and returns the bytes and the file.
// libxgboost 2.0 and later write UBJSON for any name but one ending in ".deprecated"
// (c_api.cc, XGBoosterSaveModel); 1.7 wrote the binary format for any name but .json and .ubj.
func saveLegacy(t testing.TB, b *xgb.Booster) ([]byte, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.deprecated")
	if err := b.SaveModel(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("binf")) {
		t.Fatalf("libxgboost %s wrote %q... for a .deprecated name, not the binary format", xgb.Version(), data[:min(len(data), 8)])
	}
	return data, p
}

// foresttest.LegacySeeds are the binary fixtures and the JSON models they were written from,
// by libxgboost 1.7.4: the bytes 1.x users have on disk, which libxgboost 3.0 no longer writes
// (its binary format marks scalar trees size_leaf_vector=1). TestLegacySeedFiles checks that
// libxgboost today loads each fixture as the same trees as its JSON model.
func TestLegacySeedFiles(t *testing.T) {
	for _, s := range foresttest.LegacySeeds {
		p := foresttest.Testdata(t, s.Bst)
		fromBst, err := xgb.LoadBooster(p)
		if err != nil {
			t.Fatalf("libxgboost %s cannot load %s: %v", xgb.Version(), p, err)
		}
		defer fromBst.Free()
		if s.JSON == "" {
			continue
		}
		fromJSON, err := xgb.LoadBoosterBytes(foresttest.SeedJSON(t, s.JSON))
		if err != nil {
			t.Fatal(err)
		}
		defer fromJSON.Free()
		have, err := fromBst.DumpJSON(true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fromJSON.DumpJSON(true)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("libxgboost %s loads %s as other trees than %s", xgb.Version(), p, s.JSON)
		}
	}
}

// TestLegacyParityZoo: every model of the parity zoo, saved by libxgboost in its binary
// format, predicts in Go what libxgboost predicts, both from the booster that trained it
// and from libxgboost loading the same file; and exactly what the JSON of the same
// booster predicts in Go.
func TestLegacyParityZoo(t *testing.T) {
	for i, c := range zoo() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := train(t, c, int64(100+i))
			defer tr.booster.Free()
			if vectorLeaf(c) {
				// The binary format has no vector leaves: libxgboost refuses to write one, so no
				// such file exists to serve.
				err := tr.booster.SaveModel(filepath.Join(t.TempDir(), "model.deprecated"))
				if err == nil || !strings.Contains(err.Error(), "Please use JSON/UBJ format") {
					t.Fatalf("libxgboost %s saved a vector-leaf model in the binary format (err %v)", xgb.Version(), err)
				}
				return
			}
			data, path := saveLegacy(t, tr.booster)
			m, err := forest.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := forest.Parse(tr.json)
			if err != nil {
				t.Fatal(err)
			}
			reloaded, err := xgb.LoadBooster(path)
			if err != nil {
				t.Fatal(err)
			}
			defer reloaded.Free()
			dm, err := xgb.NewDMatrixDense(tr.test, testRows, tr.feats, float32(math.NaN()))
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Free()
			kinds := []struct {
				kind forest.OutputKind
				typ  xgb.PredictType
			}{
				{forest.OutputDefault, xgb.PredictValue},
				{forest.OutputMargin, xgb.PredictMargin},
				{forest.OutputContribs, xgb.PredictContribs},
			}
			if c.params["booster"] != "gblinear" {
				kinds = append(kinds, struct {
					kind forest.OutputKind
					typ  xgb.PredictType
				}{forest.OutputLeaf, xgb.PredictLeaf})
			}
			var summary []string
			worst := 0.0
			for _, k := range kinds {
				got, err := m.Predict(nil, tr.test, testRows, k.kind)
				if err != nil {
					t.Fatalf("%s: %v", k.kind, err)
				}
				want, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: k.typ})
				if err != nil {
					t.Fatal(err)
				}
				st := compare(t, fmt.Sprintf("bst %s", k.kind), got, want)
				wantFile, _, err := reloaded.Predict(dm, xgb.PredictOptions{Type: k.typ})
				if err != nil {
					t.Fatal(err)
				}
				st2 := compare(t, fmt.Sprintf("bst %s vs libxgboost loading the .bst", k.kind), got, wantFile)
				summary = append(summary, fmt.Sprintf("%s %d/%d exact max|d|=%.2g", k.kind, st.exact, st.n, max(st.maxAbs, st2.maxAbs)))
				worst = max(worst, st.maxAbs, st2.maxAbs)
			}
			def, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: xgb.PredictValue})
			if err != nil {
				t.Fatal(err)
			}
			margin, _, err := tr.booster.Predict(dm, xgb.PredictOptions{Type: xgb.PredictMargin})
			if err != nil {
				t.Fatal(err)
			}
			checkDerived(t, m, tr.test, testRows, def, margin)
			foresttest.SameOutputs(t, m, fromJSON, tr.test, testRows)
			t.Logf("%s (%s, %d bytes): max|d| %.3g; %s", c.name, c.params["objective"], len(data), worst, strings.Join(summary, "; "))
		})
	}
}

// TestLegacyBeforeV1 checks files in the layout XGBoost wrote before 1.0 (no "binf"
// header, version fields zero, base_score stored as a margin) against what libxgboost
// 1.7 computes for the same bytes.
func TestLegacyBeforeV1(t *testing.T) {
	byName := map[string]zooCase{}
	index := map[string]int{}
	for i, c := range zoo() {
		byName[c.name], index[c.name] = c, i
	}
	for _, tc := range []struct {
		zoo       string
		storedMrg float32 // the base_score written into the file
		differs   bool    // whether a 1.x file with this base_score predicts otherwise
	}{
		{"binary_logistic_base_score", -0.8, true},
		{"binary_logitraw", 0.7, false},
		{"binary_hinge", 0.3, true},
		{"reg_logistic", 0.2, true},
		{"reg_gamma", 1.1, true},
		{"count_poisson", -0.4, true},
		{"reg_squarederror_exact", 1.5, false},
		{"multi_softprob_exact", 0.25, false},
		{"gblinear_logistic", 0.6, true},
	} {
		t.Run(tc.zoo, func(t *testing.T) {
			c := byName[tc.zoo]
			tr := train(t, c, int64(100+index[tc.zoo]))
			defer tr.booster.Free()
			data, _ := saveLegacy(t, tr.booster)
			old := bytes.Clone(data[4:]) // no header
			binary.LittleEndian.PutUint32(old[0:], math.Float32bits(tc.storedMrg))
			binary.LittleEndian.PutUint32(old[20:], 0) // major_version
			binary.LittleEndian.PutUint32(old[24:], 0) // minor_version
			p := filepath.Join(t.TempDir(), "old.model")
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
			ref, err := xgb.LoadBooster(p)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Free()
			m, err := forest.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			dm, err := xgb.NewDMatrixDense(tr.test, testRows, tr.feats, float32(math.NaN()))
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Free()
			for _, k := range []struct {
				kind forest.OutputKind
				typ  xgb.PredictType
			}{{forest.OutputDefault, xgb.PredictValue}, {forest.OutputMargin, xgb.PredictMargin}} {
				want, _, err := ref.Predict(dm, xgb.PredictOptions{Type: k.typ})
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Predict(nil, tr.test, testRows, k.kind)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, "pre-1.0 "+k.kind.String(), got, want)
			}
			// Read as a 1.x file, the same base_score means something else for
			// objectives whose transform is not the identity: the two readings differ.
			// (or is out of the objective's range).
			v1 := bytes.Clone(old)
			binary.LittleEndian.PutUint32(v1[20:], 1)
			binary.LittleEndian.PutUint32(v1[24:], 7)
			a, _ := m.Predict(nil, tr.test[:tr.feats], 1, forest.OutputMargin)
			differs := true
			if m1, err := forest.Parse(v1); err == nil {
				b, _ := m1.Predict(nil, tr.test[:tr.feats], 1, forest.OutputMargin)
				differs = a[0] != b[0]
			}
			if differs != tc.differs {
				t.Fatalf("margin %v read as pre-1.0: differs from the 1.7 reading: %v, want %v", a[0], differs, tc.differs)
			}
		})
	}
}

// BenchmarkLoadLegacy measures reading the benchmark model from the binary format,
// next to BenchmarkLoad's JSON and UBJSON.
func BenchmarkLoadLegacy(b *testing.B) {
	s := setupBench(b)
	data, _ := saveLegacy(b, s.booster)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := forest.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLegacyLogitrawBaseScoreByVersion: a binary file and a JSON file from the same
// XGBoost version read base_score the same way. Before 1.4, binary:logitraw turned
// base_score into a logit (dmlc/xgboost#6517 made it enter unchanged); the JSON reader
// keeps the writer's meaning, and so does the binary one. (libxgboost 1.7 itself reads
// 1.0-1.3 files with the new meaning, shifting their predictions by
// base_score - logit(base_score).)
func TestLegacyLogitrawBaseScoreByVersion(t *testing.T) {
	doc := strings.Replace(foresttest.TinyModel, `"name":"reg:squarederror"`, `"name":"binary:logitraw"`, 2)
	doc = strings.Replace(doc, `"base_score":"5E-1"`, `"base_score":"7.5E-1"`, 1)
	b, err := xgb.LoadBoosterBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	data, _ := saveLegacy(t, b)
	row := []float32{1, 1} // the trees add 1 - 0.25
	for _, tc := range []struct {
		major, minor uint32
		margin       float32
	}{
		{1, 7, 0.75 + 0.75},
		{1, 4, 0.75 + 0.75},
		{1, 3, float32(-math.Log(1/0.75-1)) + 0.75},
		{1, 0, float32(-math.Log(1/0.75-1)) + 0.75},
	} {
		bin := bytes.Clone(data)
		binary.LittleEndian.PutUint32(bin[4+20:], tc.major)
		binary.LittleEndian.PutUint32(bin[4+24:], tc.minor)
		mb, err := forest.Parse(bin)
		if err != nil {
			t.Fatal(err)
		}
		mj, err := forest.Parse([]byte(strings.Replace(doc, `"version":[1,7,4]`, fmt.Sprintf(`"version":[%d,%d,0]`, tc.major, tc.minor), 1)))
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := mb.Predict(nil, row, 1, forest.OutputMargin)
		gj, _ := mj.Predict(nil, row, 1, forest.OutputMargin)
		if math.Abs(float64(gb[0]-tc.margin)) > 1e-6 || gb[0] != gj[0] {
			t.Errorf("version %d.%d: binary margin %v, JSON %v, want %v", tc.major, tc.minor, gb[0], gj[0], tc.margin)
		}
	}
}
