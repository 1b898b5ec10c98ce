package forest

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// randomTreesModel writes a binary:logistic model of full trees of the given depth
// whose splits draw from nfeat features, so paths repeat features (the case where
// TreeSHAP unwinds), with hessians that add up as XGBoost's do.
func randomTreesModel(rng *rand.Rand, ntrees, depth, nfeat int) string {
	return randomTreesModelHessians(rng, ntrees, depth, nfeat, 0)
}

// randomTreesModelHessians is randomTreesModel with a fraction of right leaves
// without hessian (a cover fraction of 0 on their edge; their left siblings keep
// some, so no node is without).
func randomTreesModelHessians(rng *rand.Rand, ntrees, depth, nfeat int, zeroHessians float64) string {
	var trees []string
	for t := 0; t < ntrees; t++ {
		n := 1<<(depth+1) - 1
		left, right, feat, def := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		cond, hess := make([]string, n), make([]float64, n)
		for i := n - 1; i >= 0; i-- {
			if l := 2*i + 1; l < n {
				left[i], right[i] = fmt.Sprint(l), fmt.Sprint(l+1)
				feat[i] = fmt.Sprint(rng.Intn(nfeat))
				cond[i] = fmt.Sprint(float32(rng.NormFloat64()))
				hess[i] = hess[l] + hess[l+1]
			} else {
				left[i], right[i], feat[i] = "-1", "-1", "0"
				cond[i] = fmt.Sprint(float32(rng.NormFloat64()))
				hess[i] = float64(1 + rng.Intn(20))
				if i%2 == 0 && rng.Float64() < zeroHessians {
					hess[i] = 0
				}
			}
			def[i] = fmt.Sprint(rng.Intn(2))
		}
		hs := make([]string, n)
		for i, h := range hess {
			hs[i] = fmt.Sprint(h)
		}
		j := func(s []string) string { return "[" + strings.Join(s, ",") + "]" }
		trees = append(trees, `{"left_children":`+j(left)+`,"right_children":`+j(right)+`,"split_indices":`+j(feat)+
			`,"split_conditions":`+j(cond)+`,"default_left":`+j(def)+`,"sum_hessian":`+j(hs)+`}`)
	}
	info := strings.TrimSuffix(strings.Repeat("0,", ntrees), ",")
	return fmt.Sprintf(`{"learner":{"gradient_booster":{"model":{"gbtree_model_param":{"num_trees":"%d"},"tree_info":[%s],"trees":[%s]},"name":"gbtree"},`+
		`"learner_model_param":{"base_score":"0.5","num_class":"0","num_feature":"%d"},"objective":{"name":"binary:logistic"}}}`,
		ntrees, info, strings.Join(trees, ","), nfeat)
}

// recursiveOnly is m with every tree's contributions computed by exact TreeSHAP.
func recursiveOnly(m *Model) *Model {
	c := *m
	sd := *m.shap
	ps := *sd.path
	ps.trees = make([]pathTree, len(m.trees))
	sd.path = &ps
	c.shap = &sd
	return &c
}

// TestPathShapMatchesRecursive: contributions from the leaf tables equal exact
// TreeSHAP's (which parity/parity_test.go holds to libxgboost's) on models with repeated
// features along paths, dart weights, several groups, categorical splits and paths
// too long for tables.
func TestPathShapMatchesRecursive(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	models := map[string]string{
		"repeated features":   randomTreesModel(rng, 6, 7, 3),
		"distinct features":   randomTreesModel(rng, 4, 6, 40),
		"beyond the path cap": randomTreesModel(rng, 1, maxPathFeatures+1, 200),
		// Leaves whose cover fractions multiply to 0 keep tables of G(U).
		"leaves without hessian": randomTreesModelHessians(rng, 6, 6, 10, 0.3),
	}
	for _, f := range []string{"seed_binary.json", "seed_dart_multi.json", "categorical.json"} {
		models[f] = "testdata/" + f
	}
	for name, doc := range models {
		t.Run(name, func(t *testing.T) {
			var m *Model
			var err error
			if strings.HasPrefix(doc, "testdata/") {
				m, err = Load(doc)
			} else {
				m, err = Parse([]byte(doc))
			}
			if err != nil {
				t.Fatal(err)
			}
			tabled := 0
			for _, pt := range m.shap.path.trees {
				if pt.tabled {
					tabled++
				}
			}
			if wantTabled := name != "beyond the path cap"; (tabled > 0) != wantTabled {
				t.Fatalf("%d of %d trees use tables, want tables: %v", tabled, len(m.trees), wantTabled)
			}
			small := 0
			for _, pt := range m.shap.path.trees {
				small += len(pt.small)
			}
			if wantSmall := name == "leaves without hessian"; (small > 0) != wantSmall {
				t.Fatalf("%d leaves keep tables of G(U), want some: %v", small, wantSmall)
			}
			nf := m.NumFeatures()
			nrows := 300
			if tabled == 0 {
				nrows = 3 // 16k leaves of depth 13 cost exact TreeSHAP about 10 ms a row
			}
			rows := make([]float32, nrows*nf)
			for i := range rows {
				switch {
				case rng.Float64() < 0.1:
					rows[i] = float32(math.NaN())
				case strings.HasPrefix(name, "categorical"):
					rows[i] = float32(rng.Intn(8))
				default:
					rows[i] = float32(rng.NormFloat64())
				}
			}
			got, err := m.Predict(nil, rows, nrows, OutputContribs)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := recursiveOnly(m).Predict(nil, rows, nrows, OutputContribs)
			bad := 0
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*math.Max(1, math.Abs(float64(want[i])))) {
					if bad++; bad <= 5 {
						t.Errorf("value %d: tables %v, recursive %v", i, got[i], want[i])
					}
				}
			}
			// Contributions add up to the margin.
			margins, _ := m.Predict(nil, rows, nrows, OutputMargin)
			ng, w := m.NumGroups(), nf+1
			for r := 0; r < nrows*ng; r++ {
				var sum float64
				for _, v := range got[r*w : (r+1)*w] {
					sum += float64(v)
				}
				if d := math.Abs(sum - float64(margins[r])); d > 1e-4*math.Max(1, math.Abs(sum)) {
					t.Fatalf("row %d group %d: contributions add up to %v, margin %v", r/ng, r%ng, sum, margins[r])
				}
			}
		})
	}
}

// TestShapLeaves8 holds the AVX-512 leaf loop to the Go loop, to the bit, on trees
// whose leaves share feature lists (siblings; repeated features) and trees whose
// leaves have more than eight path features (left to the Go loop).
func TestShapLeaves8(t *testing.T) {
	if !haveShapWide {
		t.Skip("the CPU has no AVX-512F and BMI2")
	}
	var l pathLeaf
	if unsafe.Sizeof(l) != 32 || unsafe.Offsetof(l.node) != 8 || unsafe.Offsetof(l.n) != 12 ||
		unsafe.Offsetof(l.off) != 16 || unsafe.Offsetof(l.tab) != 20 || unsafe.Offsetof(l.feat) != 24 {
		t.Fatal("pathLeaf's layout is not the one shap_amd64.s reads")
	}
	rng := rand.New(rand.NewSource(7))
	for _, doc := range []string{
		randomTreesModel(rng, 20, 7, 3),
		randomTreesModel(rng, 20, 6, 40),
		randomTreesModel(rng, 6, 9, 200),
		randomTreesModel(rng, 6, 8, 200),
	} {
		m, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		ps := m.shap.path
		nf := m.NumFeatures()
		row := make([]float32, nf)
		cold := make([]uint32, ps.maxNodes)
		wide, shared := 0, 0
		for r := 0; r < 20; r++ {
			for i := range row {
				row[i] = float32(rng.NormFloat64())
				if rng.Float64() < 0.1 {
					row[i] = float32(math.NaN())
				}
			}
			for tr, pt := range ps.trees {
				if !pt.tabled {
					t.Fatalf("tree %d is not tabled", tr)
				}
				leaves := pt.scaled[:pt.wide]
				wide += len(leaves)
				for i := 1; i < len(leaves); i++ {
					if leaves[i].feat == leaves[i-1].feat {
						shared++
					}
				}
				c := cold[:pt.nodes]
				m.coldPatterns(row, m.trees[tr].root, c)
				// keySweep gives the same patterns from the row's keys.
				keys := make([]uint32, 2*nf)
				rowKeys(keys, row, 0, 1)
				byKeys := make([]uint32, pt.nodes)
				keySweep(pt.sweep, keys, byKeys)
				if !slices.Equal(byKeys, c) {
					t.Fatalf("row %d tree %d: keySweep %v, coldPatterns %v", r, tr, byKeys, c)
				}
				want, got := make([]float64, nf+1), make([]float64, nf+1)
				for i := range want {
					want[i] = rng.NormFloat64()
					got[i] = want[i]
				}
				addScaledLeaves(want, leaves, c, ps)
				if len(leaves) > 0 {
					shapLeaves8(&got[0], &leaves[0], len(leaves), &c[0], &ps.table[0], &ps.coef[0], &ps.feats[0])
				}
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("row %d tree %d feature %d: shapLeaves8 %v, the Go loop %v", r, tr, i, got[i], want[i])
					}
				}
			}
		}
		if wide == 0 || shared == 0 {
			t.Fatalf("%d leaves for shapLeaves8, %d sharing their features with the leaf before: want some of both", wide, shared)
		}
	}
}

// processCPU is the process's CPU time: on shared cores, steadier than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *Model) contribsInto(dst, rows []float32, nrows int) ([]float32, error) {
	dst = dst[:nrows*(m.numFeature+1)*m.numGroup]
	m.contribs(dst, rows, nrows)
	return dst, nil
}
