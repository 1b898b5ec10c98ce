package forest_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

// TestLegacySameAsJSON: a binary fixture and the JSON it was written from predict
// bit-identical values for every output kind, in pure Go.
func TestLegacySameAsJSON(t *testing.T) {
	for _, s := range foresttest.LegacySeeds {
		t.Run(s.Bst, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", s.Bst))
			if err != nil {
				t.Fatal(err)
			}
			bin, err := forest.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			js, err := forest.Parse(foresttest.SeedJSON(t, s.JSON))
			if err != nil {
				t.Fatal(err)
			}
			if bin.Objective() != js.Objective() || bin.Booster() != js.Booster() || bin.NumFeatures() != js.NumFeatures() ||
				bin.NumGroups() != js.NumGroups() || bin.NumTrees() != js.NumTrees() {
				t.Fatalf("binary %s/%s %d features %d groups %d trees, JSON %s/%s %d/%d/%d",
					bin.Objective(), bin.Booster(), bin.NumFeatures(), bin.NumGroups(), bin.NumTrees(),
					js.Objective(), js.Booster(), js.NumFeatures(), js.NumGroups(), js.NumTrees())
			}
			const n = 500
			rows := foresttest.GenRows(rand.New(rand.NewSource(3)), n, js.NumFeatures(), 0.2)
			foresttest.SameOutputs(t, bin, js, rows, n)
		})
	}
}

// legacyLayout locates fields of a binary model written by libxgboost 1.7, for tests
// that corrupt them.
type legacyLayout struct {
	objective, booster int // offsets of the string lengths
	boosterParam       int // GBTreeModelParam or GBLinearModelParam
	trees              []int
	treeInfo           int
	weightDrop         int // dart only, else -1
	linWeights         int // gblinear only, else -1
	attributes         int
}

func layoutOf(t *testing.T, data []byte) legacyLayout {
	t.Helper()
	u64 := func(off int) int { return int(binary.LittleEndian.Uint64(data[off:])) }
	var l legacyLayout
	l.objective = 4 + 136
	l.booster = l.objective + 8 + u64(l.objective)
	name := string(data[l.booster+8 : l.booster+8+u64(l.booster)])
	l.boosterParam = l.booster + 8 + u64(l.booster)
	l.weightDrop, l.linWeights = -1, -1
	if name == "gblinear" {
		l.linWeights = l.boosterParam + 136
		l.attributes = l.linWeights + 8 + 4*u64(l.linWeights)
		return l
	}
	numTrees := int(int32(binary.LittleEndian.Uint32(data[l.boosterParam:])))
	off := l.boosterParam + 160
	for range numTrees {
		l.trees = append(l.trees, off)
		off += 148 + 36*int(int32(binary.LittleEndian.Uint32(data[off+4:])))
	}
	l.treeInfo = off
	off += 4 * numTrees
	if name == "dart" {
		l.weightDrop = off
		off += 8 + 4*u64(off)
	}
	l.attributes = off
	return l
}

func readSeed(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLegacyCorrupt(t *testing.T) {
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	}
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(old), []byte(new)) }
	}
	bin := readSeed(t, "seed_binary.bst")
	dart := readSeed(t, "seed_dart_multi.bst")
	lin := readSeed(t, "seed_linear.bst")
	b, d, li := layoutOf(t, bin), layoutOf(t, dart), layoutOf(t, lin)
	tests := []struct {
		name   string
		file   []byte
		mutate func([]byte) []byte
		want   string
	}{
		{"num_trees beyond the file", bin, put32(b.boosterParam, 1<<20), fmt.Sprintf("offset %d: GBTreeModelParam.num_trees: 1048576 trees cannot fit", b.boosterParam)},
		{"negative num_trees", bin, put32(b.boosterParam, math.MaxUint32), "GBTreeModelParam.num_trees: -1 trees"},
		{"num_nodes beyond the file", bin, put32(b.trees[1]+4, 1<<30), fmt.Sprintf("offset %d: trees[1].TreeParam.num_nodes: 1073741824 nodes", b.trees[1]+4)},
		{"num_nodes zero", bin, put32(b.trees[0]+4, 0), "trees[0].TreeParam.num_nodes: 0 nodes"},
		{"objective length", bin, put64(b.objective, 1<<62), fmt.Sprintf("offset %d: objective: length 4611686018427387904 needs 1 bytes per element", b.objective)},
		{"booster length", bin, put64(b.booster, math.MaxUint64), "booster: length 18446744073709551615"},
		{"attribute count", bin, put64(b.attributes, 1<<40), "attributes: length 1099511627776 needs 16 bytes per element"},
		{"attribute value length", bin, put64(b.attributes+8+8+len("best_iteration"), 1<<33), "attributes[0].value: length 8589934592"},
		{"num_deleted", bin, put32(b.trees[0]+8, 5), "trees[0].TreeParam.num_deleted: says 5, the nodes mark 0 deleted"},
		{"prediction buffers", bin, put64(b.boosterParam+16, 7), "GBTreeModelParam.num_pbuffer: prediction buffers (num_pbuffer=7, XGBoost < 0.7) are not supported"},
		{"vector leaves in the booster", bin, put32(b.boosterParam+28, 2), "GBTreeModelParam.size_leaf_vector: vector leaves (size_leaf_vector=2) are not supported"},
		{"vector leaves in a tree", bin, put32(b.trees[2]+20, 3), "trees[2].TreeParam.size_leaf_vector: vector leaves (size_leaf_vector=3) are not supported"},
		{"several roots", bin, put32(b.trees[0], 2), "trees[0].TreeParam.num_roots: trees with 2 roots are not supported"},
		{"unknown booster", bin, replace("gbtree", "gbtrex"), `booster: unsupported booster "gbtrex"`},
		{"unknown objective", bin, replace("binary:logistic", "binary:logistix"), `unsupported objective "binary:logistix"`},
		{"objective config disagrees", bin, replace(`{"name":"binary:logistic"`, `{"name":"binary:logitraw"`), `attributes.objective: configures objective "binary:logitraw", the learner's objective is "binary:logistic"`},
		{"objective config not JSON", bin, replace(`{"name":"binary:logistic"`, `["name":"binary:logistic"`), "attributes.objective: expected an object, got array"},
		{"num_class disagrees", dart, put32(4+8, 4), "softmax_multiclass_param.num_class 3, the learner's num_class is 4"},
		{"trailing bytes", bin, func(b []byte) []byte { return append(b, 1, 2, 3) }, fmt.Sprintf("offset %d: end of model: 3 unexpected bytes after the attributes", len(bin))},
		{"base_score NaN", bin, put32(4, 0x7fc00000), "offset 4: LearnerModelParam.base_score: expected a finite number, got NaN"},
		{"base_score out of range", bin, put32(4, math.Float32bits(1.5)), "base_score 1.5 out of range (0, 1) for objective binary:logistic"},
		{"future version", bin, put32(4+20, 9), "LearnerModelParam.major_version: expected a file written by XGBoost 0.x to 3.x, got version 9.7"},
		{"num_feature zero", bin, put32(4+4, 0), "num_feature: expected 1.."},
		{"child out of range", bin, put32(b.trees[0]+148+4, 99), "trees[0]: node 0: child 99 out of range"},
		{"split feature out of range", bin, put32(b.trees[0]+148+12, 50), "trees[0]: node 0: split_indices 50 out of range [0, 3)"},
		{"tree_info group", bin, put32(b.treeInfo+4, 2), "tree_info[1]: group 2 out of range [0, 1)"},
		{"weight_drop length", dart, put64(d.weightDrop, 1<<50), "weight_drop: length 1125899906842624 needs 4 bytes per element"},
		{"weight_drop count", dart, func(b []byte) []byte {
			// One weight fewer, the rest of the file shifted to match.
			n := binary.LittleEndian.Uint64(b[d.weightDrop:])
			out := append([]byte{}, b[:d.weightDrop]...)
			out = binary.LittleEndian.AppendUint64(out, n-1)
			out = append(out, b[d.weightDrop+8:d.weightDrop+8+4*int(n-1)]...)
			return append(out, b[d.weightDrop+8+4*int(n):]...)
		}, "weight_drop: 11 weights for 12 trees"},
		{"gblinear weights length", lin, put64(li.linWeights, 1<<40), "weights: length 1099511627776"},
		{"gblinear weights count", lin, func(b []byte) []byte {
			n := binary.LittleEndian.Uint64(b[li.linWeights:])
			out := append([]byte{}, b[:li.linWeights]...)
			out = binary.LittleEndian.AppendUint64(out, n-1)
			out = append(out, b[li.linWeights+8:li.linWeights+8+4*int(n-1)]...)
			return append(out, b[li.linWeights+8+4*int(n):]...)
		}, "weights: expected (num_feature+1)*groups = 4 weights, got 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.mutate(bytes.Clone(tc.file))
			m, err := forest.Parse(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if m != nil {
				t.Fatal("model and error")
			}
		})
	}
}

// TestLegacyTruncated: every prefix of a binary model fails with an error that says
// where, never a panic or a model.
func TestLegacyTruncated(t *testing.T) {
	for _, s := range foresttest.LegacySeeds {
		data := readSeed(t, s.Bst)
		for _, header := range []bool{true, false} {
			if !header {
				data = data[4:]
			}
			for n := 0; n < len(data); n++ {
				m, err := forest.Parse(data[:n])
				if err == nil || m != nil {
					t.Fatalf("%s (header %v): prefix of %d/%d bytes: model %v, error %v", s.Bst, header, n, len(data), m != nil, err)
				}
				if header && n >= 4 && !strings.Contains(err.Error(), "offset ") {
					t.Fatalf("%s: prefix of %d bytes: error %q does not say where", s.Bst, n, err)
				}
			}
		}
	}
}

// TestParseByContent: the reader is chosen by the bytes, and what is not a model is
// named.
func TestParseByContent(t *testing.T) {
	bst := readSeed(t, "seed_binary.bst")
	js := readSeed(t, "seed_binary.json")
	const pickleAdvice = "this looks like a Python pickle; gangboost never loads pickles: load it in Python and save with booster.save_model('model.json')"
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" = loads
	}{
		{"binary with header", bst, ""},
		{"binary without header", bst[4:], ""},
		{"JSON after whitespace", append([]byte(" \n\t"), js...), ""},
		{"pickle protocol 2", []byte("\x80\x02cxgboost.core\nBooster\nq\x00)\x81q\x01}q\x02X\x06\x00\x00\x00handleq\x03"), pickleAdvice},
		{"pickle protocol 4", append([]byte("\x80\x04\x95\x12\x34\x00\x00\x00\x00\x00\x00\x8c\x0excgboost.core"), bst[:200]...), pickleAdvice},
		{"pickle protocol 5", []byte("\x80\x05\x95"), pickleAdvice},
		{"joblib zlib", []byte("\x78\x9c\xed\x5a\x09\x38\x94\x6b\x17\xff\xcc"), "joblib.dump(..., compress=...) writes a compressed pickle); gangboost never loads pickles"},
		{"gzip", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), "compressed data"},
		{"dump_model text", []byte("booster[0]:\n0:[f0<0.5] yes=1,no=2,missing=1\n\t1:leaf=0.1\n"), `not an XGBoost model: the file is text starting with "booster[0]:\n0:[f0<0.`},
		{"binary garbage", []byte{1, 0, 2, 0, 3}, "not an XGBoost model: neither JSON, UBJSON nor XGBoost's binary format (binary model: offset 0: LearnerModelParam: truncated: need 136 bytes, 5 left)"},
		{"binf then garbage", []byte("binf\x00\x01"), "binary model: offset 4: LearnerModelParam: truncated: need 136 bytes, 2 left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := forest.Parse(tc.data)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m.Objective() != "binary:logistic" {
					t.Fatalf("objective %q", m.Objective())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
