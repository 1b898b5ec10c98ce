package forest

import (
	"fmt"
	"math"
	"math/rand"
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
			rows := make([]float32, nrows*tc.feats)
			for i := range rows {
				rows[i] = float32(rng.NormFloat64())
				if rng.Float64() < 0.2 {
					rows[i] = float32(math.NaN())
				}
			}
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
