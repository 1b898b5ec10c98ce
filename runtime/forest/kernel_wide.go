package forest

import (
	"math"
	"unsafe"
)

// The wide kernel evaluates batches on CPUs with AVX-512: sixteen rows walk a tree in
// one vector, one level a step. The scalar walks (kernel.go) load a node's feature,
// the row's key and the node's child for every row and level, and eight of them
// barely keep the core busy; here the node's feature and threshold come from the
// level's tables by a register permute (VPERMT2D), shared by the sixteen rows, and
// only the keys are loaded, one gather a level. Levels 0 and 1 need none: all lanes
// start at node 0, whose keys for the sixteen rows are sixteen consecutive values (see
// the key layout in kernel.go), and levels 1 and 2 have two and four nodes: a load
// each, blended by the lanes' positions, costs less than a gather's sixteen loads.
//
// A tree is stored as a full tree of its depth, level by level: node j of level l has
// children 2j and 2j+1 on level l+1, so a step is j = 2j + (key >= threshold) and
// needs no child index. A leaf above the last level becomes a node whose threshold 0
// every key reaches (it goes right) and whose subtrees repeat the leaf, so every row
// walks exactly depth levels and ends on the leaf it would reach in the flat tree.
// The permutes hold 32 entries, so trees up to wideMaxDepth levels deep (32 nodes on
// the last level of splits, 64 leaves in two permutes and a blend) fit; a model with a deeper tree uses the scalar kernels. Comparisons are on the same
// keys as the scalar kernels' (kernel.go), missing values included, and each lane adds
// its leaf values in tree order, so the margins are the scalar kernels' bit for bit.

// wideTree is one tree's place in wideTrees.tables; its layout is read by wideWalk.
type wideTree struct {
	off   uint32 // index of the tree's first level in tables
	depth int32
	group int32
	_     int32
}

// wideTrees holds the trees for the wide kernel.
type wideTrees struct {
	// Per tree, per level, 64 values: 32 key offsets (lane 0's key of the node's
	// feature, in the copy for its default direction, in a vector's keys), then 32
	// thresholds (keys); then 64 leaf values (as float32 bits). Only the first 2^level
	// entries of a level are reached.
	tables []uint32
	trees  []wideTree
}

const (
	wideLanes    = 16 // rows in a vector
	wideMaxDepth = 6  // deepest tree whose levels fit the 32-entry permutes
	wideLevel    = 64 // values per level in wideTrees.tables
	// wideVectors is how many vectors of rows walk a tree together (wideWalk is
	// written for four): a tree's tables are read once for 64 rows.
	wideVectors = 4
	// wideMinRows is the smallest batch the wide kernel takes: it walks 64 rows
	// whatever the batch, in about the time the scalar kernels walk 25 to 30
	// (BenchmarkMargins: 2.2 to 3.3 ns a tree and row against 5 to 8). Set when
	// the kernel gathered at every level; since levels 0 to 2 load instead it
	// measures 1.2 to 1.7 ns, and a smaller minimum may pay: not yet measured.
	wideMinRows = 32
)

// buildWide lays the trees out for the wide kernel, or leaves m.wide empty when the
// CPU lacks AVX-512 or the model does not fit it: trees deeper than wideMaxDepth, or
// rows or groups too many for a block's keys and margins to stay within scratchBudget.
func (m *Model) buildWide() {
	nf, ng := m.numFeature, m.numGroup
	if !haveWide || len(m.trees) == 0 ||
		wideVectors*2*nf*wideLanes > scratchBudget || wideVectors*ng*wideLanes > scratchBudget {
		return
	}
	size := 0
	for _, tr := range m.trees {
		if tr.depth > wideMaxDepth {
			return
		}
		size += wideLevel * int(tr.depth+1)
	}
	// 16 values of slack so that every level starts on a 64-byte line.
	buf := make([]uint32, size+wideLanes)
	start := (wideLanes - int(uintptr(unsafe.Pointer(&buf[0]))/4%wideLanes)) % wideLanes
	w := wideTrees{tables: buf[start : start+size], trees: make([]wideTree, len(m.trees))}
	off := 0
	for t, tr := range m.trees {
		w.trees[t] = wideTree{off: uint32(off), depth: tr.depth, group: tr.group}
		m.fillWide(w.tables[off:off+wideLevel*int(tr.depth+1)], tr.root, 0, 0, int(tr.depth))
		off += wideLevel * int(tr.depth+1)
	}
	m.wide = w
}

// fillWide writes flat node i as node j of level l of a full tree of the given depth
// whose levels start at t.
func (m *Model) fillWide(t []uint32, i uint32, l, j, depth int) {
	n := &m.nodes[i]
	if l == depth {
		t[l*wideLevel+j] = math.Float32bits(n.value)
		return
	}
	left, right := i, i // a leaf above the last level: both subtrees repeat it
	var off, thr uint32 // offset 0 is a valid key; threshold 0: every key goes right
	if n.left != i {
		left, right = n.left, n.left+1
		var key uint32
		thr, key = m.splitKey(i)
		off = key * wideLanes
	}
	t[l*wideLevel+j] = off
	t[l*wideLevel+32+j] = thr
	m.fillWide(t, left, l+1, 2*j, depth)
	m.fillWide(t, right, l+1, 2*j+1, depth)
}

// wideMargins adds the trees' leaf values to nrows rows' margins in out, a block of
// wideVectors vectors of rows at a time; a last block with fewer rows is filled up
// with copies of its last row, walked and not read.
func (m *Model) wideMargins(out, rows []float32, nrows int) {
	nf, ng := m.numFeature, m.numGroup
	vecKeys := 2 * nf * wideLanes
	const block = wideVectors * wideLanes
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	keys := growKeys(s.keys, wideVectors*vecKeys)
	s.keys = keys
	if cap(s.margins) < ng*block {
		s.margins = make([]float32, ng*block)
	}
	// acc[(g*wideVectors+v)*wideLanes+lane] is the margin of group g of the block's
	// row v*wideLanes+lane: the layout wideWalk reads.
	acc := s.margins[:ng*block]
	for b := 0; b < nrows; b += block {
		e := min(b+block, nrows)
		wideKeys(&rows[b*nf], e-b, nf, &keys[0], vecKeys*4)
		for k := 0; k < block; k++ {
			r := min(b+k, e-1)
			for g := 0; g < ng; g++ {
				acc[g*block+k] = out[r*ng+g]
			}
		}
		wideWalk(&m.wide.tables[0], &m.wide.trees[0], len(m.wide.trees), &keys[0], vecKeys*4, &acc[0])
		for r := b; r < e; r++ {
			for g := 0; g < ng; g++ {
				out[r*ng+g] = acc[g*block+r-b]
			}
		}
	}
}
