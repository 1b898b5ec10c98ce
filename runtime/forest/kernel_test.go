package forest

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"testing"
)

// TestKernelLayouts: every key layout the margin kernels choose by row width (eight
// lanes with 16-bit or 32-bit feature offsets, one lane for very wide rows) gives the
// bounds-checked reference walk's margins, for batches with a partial lane group and
// for single rows.
func TestKernelLayouts(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		feats  int
		lanes  int
		feat16 bool
		ntrees int
		depth  int
	}{
		{20, 8, true, 30, 6},
		{1024, 8, true, 10, 6},
		{1025, 8, false, 10, 6},
		{5000, 1, true, 10, 6},
		{9000, 1, false, 10, 6},
	} {
		t.Run(fmt.Sprint(tc.feats, " features"), func(t *testing.T) {
			m, err := Parse([]byte(randomTreesModel(rng, tc.ntrees, tc.depth, tc.feats)))
			if err != nil {
				t.Fatal(err)
			}
			if m.lanes != tc.lanes || (m.fast.feat16 != nil) != tc.feat16 {
				t.Fatalf("lanes %d, 16-bit offsets %v; want %d, %v", m.lanes, m.fast.feat16 != nil, tc.lanes, tc.feat16)
			}
			const nrows = 77
			rows := randomRows(rng, nrows*tc.feats, 1)
			want := m.referenceMargins(rows, nrows)
			got, err := m.Predict(nil, rows, nrows, OutputMargin)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < nrows; r++ {
				one, _ := m.Predict(nil, rows[r*tc.feats:(r+1)*tc.feats], 1, OutputMargin)
				if got[r] != want[r] || one[0] != want[r] {
					t.Fatalf("row %d: batch %v, single %v, reference walk %v", r, got[r], one[0], want[r])
				}
			}
		})
	}
}

// TestWideKernel: on every zoo model the wide kernel takes (pruned and unbalanced trees,
// several groups, dart weights), its margins are the bounds-checked reference walk's
// bit for bit, for batches that fill whole blocks and batches that end in a partial one.
func TestWideKernel(t *testing.T) {
	if !haveWide {
		t.Skip("the CPU has no AVX-512: the wide kernel never runs here")
	}
	paths, err := filepath.Glob("testdata/zoo/*/*/json/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no zoo models: %v", err)
	}
	rng := rand.New(rand.NewSource(7))
	taken := 0
	for _, path := range paths {
		m, err := Load(path)
		if err != nil || m.wide.trees == nil {
			continue
		}
		taken++
		for _, nrows := range []int{wideMinRows, 64, 77, 200} {
			rows := randomRows(rng, nrows*m.numFeature, 3)
			want := m.referenceMargins(rows, nrows)
			got, err := m.Predict(nil, rows, nrows, OutputMargin)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, %d rows: margin[%d] %v, reference walk %v", path, nrows, i, got[i], want[i])
				}
			}
		}
	}
	if taken < 10 {
		t.Fatalf("the wide kernel took %d zoo models, want most of them", taken)
	}
	t.Logf("%d zoo models on the wide kernel", taken)
}

// TestFloatKey: keys order as the floats they map, -0 and +0 alike.
func TestFloatKey(t *testing.T) {
	vals := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1)), 0,
		math.SmallestNonzeroFloat32, 1, math.MaxFloat32, float32(math.Inf(1))}
	for i := 1; i < len(vals); i++ {
		a, b := floatKey(vals[i-1]), floatKey(vals[i])
		if want := vals[i-1] < vals[i]; (a < b) != want || (a == b) == want {
			t.Errorf("floatKey(%v) = %#x, floatKey(%v) = %#x: order differs from the floats'", vals[i-1], a, vals[i], b)
		}
	}
}

// TestWideKeys: wideKeys writes the keys rowKeys would, special values included, and
// fills the lanes past a partial block's last row with that row's keys.
func TestWideKeys(t *testing.T) {
	if !haveWide {
		t.Skip("the CPU has no AVX-512: the wide kernel never runs here")
	}
	rng := rand.New(rand.NewSource(3))
	const nf = 7
	vecKeys := 2 * nf * wideLanes
	for _, nrows := range []int{1, 17, 63, 64} {
		rows := make([]float32, nrows*nf)
		for i := range rows {
			rows[i] = specialValues[rng.Intn(len(specialValues))]
		}
		got := make([]uint32, wideVectors*vecKeys)
		want := make([]uint32, wideVectors*vecKeys)
		wideKeys(&rows[0], nrows, nf, &got[0], vecKeys*4)
		for k := 0; k < wideVectors*wideLanes; k++ {
			r := min(k, nrows-1)
			v, lane := k/wideLanes, k%wideLanes
			rowKeys(want[v*vecKeys:(v+1)*vecKeys], rows[r*nf:(r+1)*nf], lane, wideLanes)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d rows: key[%d] %#x, rowKeys %#x", nrows, i, got[i], want[i])
			}
		}
	}
}

// specialValues are the floats whose keys are easiest to get wrong: zeros of both
// signs, infinities, NaNs of several bit patterns, denormals, the largest finite.
var specialValues = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001),
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}

// TestRowKernel: on every zoo model the row kernel takes (pruned and unbalanced trees
// padded to their group's depth, dart weights, a last group of fewer than twelve trees,
// several output groups: multi-class, multi-target)
// and on full trees of every depth it has a code path for, a single row's margin is the
// bounds-checked reference walk's bit for bit; models it cannot take keep the scalar
// kernel.
func TestRowKernel(t *testing.T) {
	check := func(t *testing.T, name string, m *Model, rng *rand.Rand) {
		t.Helper()
		const nrows = 40
		rows := randomRows(rng, nrows*m.numFeature, 3)
		// Half the values sit exactly on a threshold of their feature, which goes right.
		splits := make([][]float32, m.numFeature)
		for i, n := range m.nodes {
			if n.left != uint32(i) && n.split == n.split {
				splits[n.feat] = append(splits[n.feat], n.split)
			}
		}
		for i := range rows {
			if s := splits[i%m.numFeature]; len(s) > 0 && rng.Intn(2) == 0 {
				rows[i] = s[rng.Intn(len(s))]
			}
		}
		want := m.referenceMargins(rows, nrows)
		ng := m.numGroup
		for r := 0; r < nrows; r++ {
			got, err := m.Predict(nil, rows[r*m.numFeature:(r+1)*m.numFeature], 1, OutputMargin)
			if err != nil {
				t.Fatal(err)
			}
			for g := range got {
				if math.Float32bits(got[g]) != math.Float32bits(want[r*ng+g]) {
					t.Fatalf("%s, row %d: margin[%d] %v, reference walk %v", name, r, g, got[g], want[r*ng+g])
				}
			}
		}
	}
	if !haveRow {
		t.Skip("the row kernel has no code for this CPU")
	}
	rng := rand.New(rand.NewSource(11))
	paths, err := filepath.Glob("testdata/zoo/*/*/json/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no zoo models: %v", err)
	}
	taken, partial, multi := 0, 0, 0
	for _, path := range paths {
		m, err := Load(path)
		if err != nil || m.row.groups == nil {
			continue
		}
		taken++
		if len(m.trees)%rowWays != 0 {
			partial++
		}
		if m.numGroup > 1 {
			multi++
		}
		check(t, path, m, rng)
	}
	if taken < 10 || partial == 0 || multi == 0 {
		t.Fatalf("the row kernel took %d zoo models (%d with a partial group, %d with several output groups), want most of them and some of each", taken, partial, multi)
	}
	t.Logf("%d zoo models on the row kernel", taken)
	for depth := 0; depth <= rowMaxDepth+1; depth++ {
		m, err := Parse([]byte(randomTreesModel(rng, 19, depth, 37)))
		if err != nil {
			t.Fatal(err)
		}
		if (m.row.groups != nil) != (depth <= rowMaxDepth) {
			t.Fatalf("depth %d: row kernel %v, want %v", depth, m.row.groups != nil, depth <= rowMaxDepth)
		}
		check(t, fmt.Sprint("full trees of depth ", depth), m, rng)
	}
	// Rows of more features than rowWalk keeps keys for on its stack take a scratch.
	wide := rowStackKeys/2 + 1
	m, err := Parse([]byte(randomTreesModel(rng, 19, 5, wide)))
	if err != nil || m.row.groups == nil {
		t.Fatalf("%d features: row kernel %v, err %v", wide, m.row.groups != nil, err)
	}
	check(t, fmt.Sprint(wide, " features"), m, rng)
}

// TestRowKeys1: rowKeys1 writes the keys rowKeys writes for one lane, special values
// included, for rows that end mid-vector, and nothing past them.
func TestRowKeys1(t *testing.T) {
	if !haveRow || !haveWide {
		t.Skip("the CPU has no AVX-512: rowKeys1 never runs here")
	}
	rng := rand.New(rand.NewSource(13))
	for nf := 1; nf <= 50; nf++ {
		row := make([]float32, nf)
		for i := range row {
			row[i] = specialValues[rng.Intn(len(specialValues))]
		}
		got := make([]uint32, 2*nf+16)
		for i := range got {
			got[i] = 0xdeadbeef
		}
		want := make([]uint32, 2*nf)
		rowKeys1(&row[0], nf, &got[0])
		rowKeys(want, row, 0, 1)
		for i := range got {
			if i < 2*nf && got[i] != want[i] || i >= 2*nf && got[i] != 0xdeadbeef {
				t.Fatalf("%d features: key[%d] %#x, rowKeys %#x (past the keys: untouched)", nf, i, got[i], want[min(i, 2*nf-1)])
			}
		}
	}
}

// randomRows are n feature values, normal with standard deviation scale, a fifth of them
// missing (NaN).
func randomRows(rng *rand.Rand, n int, scale float64) []float32 {
	rows := make([]float32, n)
	for i := range rows {
		rows[i] = float32(rng.NormFloat64() * scale)
		if rng.Float64() < 0.2 {
			rows[i] = float32(math.NaN())
		}
	}
	return rows
}
