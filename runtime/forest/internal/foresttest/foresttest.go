// Package foresttest holds what the evaluator's pure-Go tests and its libxgboost parity
// suite (runtime/forest/parity) share: the hand-written tiny model, the binary seed fixtures
// under runtime/forest/testdata, the row generator and the bit-identical comparison.
package foresttest

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/runtime/forest"
)

// Testdata is the path of a file under runtime/forest/testdata, from whichever package's
// tests ask. It is found from the checkout (go test runs a package in its own folder), not from
// this file's compiled path: make test builds with -trimpath, which leaves that path relative.
func Testdata(tb testing.TB, name string) string {
	tb.Helper()
	root, err := repodir.Root()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "runtime", "forest", "testdata", name)
}

// GenRows draws n rows: feature values mix normals, a few integers and outliers, with
// nanFrac of the cells missing.
func GenRows(r *rand.Rand, n, f int, nanFrac float64) []float32 {
	x := make([]float32, n*f)
	for i := range x {
		switch {
		case r.Float64() < nanFrac:
			x[i] = float32(math.NaN())
		case i%f == 1:
			x[i] = float32(r.Intn(5)) // ties at split thresholds
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
	return x
}

// TinyModel is a hand-written XGBoost 1.7 JSON model over two features:
//
//	tree 0: x0 < 0.5 ? -1 : 1, missing goes left
//	tree 1: pruned (nodes 1 and 2 deleted), children stored out of order:
//	        x1 < 0 ? node 4 (0.25) : node 3 (-0.25), missing goes right
//
// base_score 0.5, reg:squarederror.
const TinyModel = `{"learner":{"attributes":{},"feature_names":["f0","f1"],"feature_types":["float","float"],
"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"2","size_leaf_vector":"0"},
"tree_info":[0,0],"trees":[
{"base_weights":[0E0,0E0,0E0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],
 "default_left":[1,0,0],"id":0,"left_children":[1,-1,-1],"loss_changes":[1E0,0E0,0E0],"parents":[2147483647,0,0],
 "right_children":[2,-1,-1],"split_conditions":[5E-1,-1E0,1E0],"split_indices":[0,0,0],"split_type":[0,0,0],
 "sum_hessian":[1E1,5E0,5E0],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"3","size_leaf_vector":"0"}},
{"base_weights":[0E0,0E0,0E0,0E0,0E0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],
 "default_left":[0,1,1,0,0],"id":1,"left_children":[4,-1,-1,-1,-1],"loss_changes":[1E0,0E0,0E0,0E0,0E0],
 "parents":[2147483647,0,0,0,0],"right_children":[3,-1,-1,-1,-1],"split_conditions":[0E0,9E0,9E0,-2.5E-1,2.5E-1],
 "split_indices":[1,2147483647,2147483647,0,0],"split_type":[0,0,0,0,0],"sum_hessian":[8E0,0E0,0E0,3E0,5E0],
 "tree_param":{"num_deleted":"2","num_feature":"2","num_nodes":"5","size_leaf_vector":"0"}}]},"name":"gbtree"},
"learner_model_param":{"base_score":"5E-1","boost_from_average":"1","num_class":"0","num_feature":"2","num_target":"1"},
"objective":{"name":"reg:squarederror","reg_loss_param":{"scale_pos_weight":"1"}}},"version":[1,7,4]}`

// LegacySeed is a binary fixture under testdata and the JSON model it was written from
// ("" for TinyModel).
type LegacySeed struct{ Bst, JSON string }

// LegacySeeds are the binary fixtures and the JSON models they were written from.
var LegacySeeds = []LegacySeed{
	{"seed_binary.bst", "seed_binary.json"},
	{"seed_dart_multi.bst", "seed_dart_multi.json"},
	{"seed_linear.bst", "seed_linear.json"},
	{"tiny_pruned.bst", ""}, // TinyModel: a pruned tree with deleted nodes
}

// SeedJSON is the JSON model a binary seed was written from.
func SeedJSON(t testing.TB, name string) []byte {
	t.Helper()
	if name == "" {
		return []byte(TinyModel)
	}
	js, err := os.ReadFile(Testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// SameOutputs requires bit-identical results (or the same error) for every output kind.
func SameOutputs(t testing.TB, got, want *forest.Model, rows []float32, n int) {
	t.Helper()
	for _, kind := range []forest.OutputKind{forest.OutputDefault, forest.OutputMargin, forest.OutputProba,
		forest.OutputLabel, forest.OutputLeaf, forest.OutputContribs} {
		g, gerr := got.Predict(nil, rows, n, kind)
		w, werr := want.Predict(nil, rows, n, kind)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%s: binary error %v, JSON error %v", kind, gerr, werr)
		}
		if len(g) != len(w) {
			t.Fatalf("%s: %d values from the binary model, %d from JSON", kind, len(g), len(w))
		}
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d]: binary %v, JSON %v", kind, i, g[i], w[i])
			}
		}
	}
}
