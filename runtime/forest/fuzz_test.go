package forest

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader. It must never panic; when a model
// loads, every output must evaluate without panicking, and the unchecked margin kernels
// must agree with the bounds-checked reference walk (a disagreement would mean a
// kernel read outside the model or the row).
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, ext := range []string{"*.json", "*.ubj", "*.bst"} {
		files, _ := filepath.Glob(filepath.Join("testdata", ext))
		seeds = append(seeds, files...)
	}
	// XGBoost 3.4 layouts: dart saved as gbtree, per-class intercepts, the "cats"
	// encoder, categorical splits, vector leaves (also 2.1's layout of them).
	for _, name := range []string{"dart_reg/ubj/model.ubj", "gblinear_multi/json/model.json",
		"reg_quantileerror_4/json/model.json", "cat_mixed_reg/ubj/model.ubj", "multi_target_vector_leaf/ubj/model.ubj"} {
		seeds = append(seeds, filepath.Join("testdata", "zoo", "xgb-3.4.1", filepath.FromSlash(name)))
	}
	seeds = append(seeds, filepath.Join("testdata", "zoo", "xgb-2.1.4", "multi_target_vector_leaf", "json", "model.json"))
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if filepath.Ext(p) == ".bst" {
			f.Add(data[4:]) // the binary format without its "binf" header, as before 1.0
		}
	}
	f.Add([]byte(`{"learner":{}}`))
	f.Add([]byte{'{', 'L', 0, 0, 0, 0, 0, 0, 0, 1, 'x', '[', '$', 'd', '#', 'L', 0x7f, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatal("model and error")
			}
			return
		}
		nf := m.NumFeatures()
		if nf > 4096 || m.NumGroups() > 256 {
			return // rows this wide are the caller's memory, not the loader's
		}
		specials := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1, -1, 0.5,
			float32(math.Inf(1)), float32(math.Inf(-1)), 3, 1e30, -1e-30, 7}
		const n = 9
		rows := make([]float32, n*nf)
		for i := range rows {
			rows[i] = specials[(i*7+i/nf)%len(specials)]
		}
		for _, kind := range []OutputKind{OutputDefault, OutputMargin, OutputProba, OutputLabel, OutputLeaf, OutputContribs} {
			w, werr := m.Width(kind)
			out, err := m.Predict(nil, rows, n, kind)
			if (werr == nil) != (err == nil) {
				t.Fatalf("%v: Width error %v, Predict error %v", kind, werr, err)
			}
			if err == nil && len(out) != n*w {
				t.Fatalf("%v: %d values, want %d", kind, len(out), n*w)
			}
		}
		if m.fast.cl == nil {
			return
		}
		for _, nrows := range []int{1, n} {
			got, _ := m.Predict(nil, rows[:nrows*nf], nrows, OutputMargin)
			want := m.referenceMargins(rows[:nrows*nf], nrows)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("nrows %d: margin[%d] kernel %v, reference walk %v", nrows, i, got[i], want[i])
				}
			}
		}
	})
}

// referenceMargins evaluates tree models with the bounds-checked walk.
func (m *Model) referenceMargins(rows []float32, nrows int) []float32 {
	nf, ng := m.numFeature, m.numGroup
	out := make([]float32, nrows*ng)
	for r := 0; r < nrows; r++ {
		copy(out[r*ng:], m.baseMargin)
		for t := range m.trees {
			i := m.walk(rows[r*nf:(r+1)*nf], &m.trees[t])
			out[r*ng+int(m.trees[t].group)] += m.nodes[i].value
		}
	}
	return out
}
