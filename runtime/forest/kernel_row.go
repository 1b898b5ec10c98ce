package forest

import (
	"math"
	"unsafe"
)

// The row kernel evaluates a single row. The scalar walk of kernel.go takes three
// loads a step (the node's feature, the row's key, the node's child and threshold) and
// eight walks a time; here a node is one word, its feature's key offset and its
// threshold, and a step is two loads, an add and an add-with-carry
// (kernel_row_amd64.s):
//
//	word  = key's byte offset << 32 | 2^32 - threshold key
//	child = 2r + carry(key + low half)   (r: the node's breadth-first number, root 1)
//
// Groups of twelve consecutive trees of one output group (in a multi-class model,
// every num_class-th tree) are stored as full trees of the group's depth, one after
// another: a tree of depth D is its 2^D node words (breadth first, word 0 unused),
// then its 2^D leaf values (float32), 12*2^D bytes. The twelve walks of a group address
// their trees by constant displacements, and a tree's first three levels share one
// cache line. A leaf above the group's last level becomes a node of threshold "never"
// (low half 0: no key carries, the walk goes left) whose subtrees repeat it, so every
// walk takes exactly the group's depth in steps. An output group's last group is filled
// up with trees whose every leaf is -0 (x + -0 is x for every x, -0 and NaN included),
// so the kernel adds twelve leaves a group and needs no count. Keys are those of
// kernel.go for one lane, so comparisons and missing values are the scalar kernels',
// and each output group's leaf values are added in tree order: the margins are theirs
// bit for bit.

// rowGroup is one group of trees in rowTrees.words; its layout is read by rowSum.
type rowGroup struct {
	off   uint32 // index in rowTrees.words of the group's start
	depth int32  // steps from root to leaf: the deepest of its trees
}

// rowTrees holds the trees for the row kernel; empty where it does not run.
type rowTrees struct {
	words  []uint32 // node r of a tree: [2r] 2^32 - threshold, [2r+1] key offset
	groups []rowGroup
	outs   []int // output group g's trees are groups[outs[g]:outs[g+1]]
}

const (
	// rowWays is how many trees of a group walk together: twelve chains of dependent
	// loads in flight, every general register the kernel has (8 measured 8-10% slower
	// on BenchmarkMargins' row).
	rowWays = 12
	// rowMaxDepth is the deepest group rowSum has a code path for.
	rowMaxDepth = 8
	// rowMaxWords bounds the padding of shallow trees to their group's depth: the
	// layout is built only if its words (uint32) are at most this many a flat node
	// (groups of full trees of one depth: about 1.5), or at most rowSmallWords.
	rowMaxWords = 6
	// rowSmallWords is what a small model's layout may take whatever its padding
	// (64 KiB): the Iris model's 60 trees of 1 to 4 levels, a class of one-split trees
	// and two of deeper ones, take 2,448 words for 404 nodes.
	rowSmallWords = 1 << 14
)

// buildRow lays the trees out for the row kernel, or leaves m.row empty: on CPUs it
// has no code for, for a tree deeper than rowMaxDepth, or padding beyond rowMaxWords.
func (m *Model) buildRow() {
	if !haveRow || len(m.trees) == 0 {
		return
	}
	// Each output group's trees in tree order: a group's walks add to one margin, in
	// the order the scalar kernels add them.
	byOut := make([][]int, m.numGroup)
	for t := range m.trees {
		g := m.trees[t].group
		byOut[g] = append(byOut[g], t)
	}
	var groups []rowGroup
	var members [][]int // each group's trees
	outs := make([]int, m.numGroup+1)
	size := 0
	for g, trees := range byOut {
		for first := 0; first < len(trees); first += rowWays {
			ts := trees[first:min(first+rowWays, len(trees))]
			var depth int32
			for _, t := range ts {
				depth = max(depth, m.trees[t].depth)
			}
			if depth > rowMaxDepth {
				return
			}
			groups = append(groups, rowGroup{off: uint32(size), depth: depth})
			members = append(members, ts)
			size += rowWays * 3 << depth
		}
		outs[g+1] = len(groups)
	}
	if size > max(rowMaxWords*len(m.nodes), rowSmallWords) || size >= math.MaxUint32/8 {
		return
	}
	// Slack to start on a 64-byte line: trees of depth 4 and more then start on one.
	buf := make([]uint32, size+16)
	start := (16 - int(uintptr(unsafe.Pointer(&buf[0]))/4%16)) % 16
	words := buf[start : start+size]
	for g, gr := range groups {
		stride := 3 << gr.depth
		for k := 0; k < rowWays; k++ {
			t := words[int(gr.off)+k*stride : int(gr.off)+(k+1)*stride]
			if k < len(members[g]) {
				m.fillRow(t, m.trees[members[g][k]].root, 1, 0, int(gr.depth))
				continue
			}
			// Filling up an output group's last group: nodes 0 go left, to leaves of -0.
			for i := 2 << gr.depth; i < stride; i++ {
				t[i] = math.Float32bits(float32(math.Copysign(0, -1)))
			}
		}
	}
	m.row = rowTrees{words: words, groups: groups, outs: outs}
}

// fillRow writes flat node i as node r, on level l, of a full tree of the given depth.
func (m *Model) fillRow(t []uint32, i uint32, r, l, depth int) {
	n := &m.nodes[i]
	if l == depth {
		t[1<<depth+r] = math.Float32bits(n.value)
		return
	}
	left, right := i, i // a leaf above the last level: both subtrees repeat it
	var c, off uint32   // c 0: no key carries, every row goes left
	if n.left != i {
		left, right = n.left, n.left+1
		c, off = m.splitCarry(i)
	}
	t[2*r], t[2*r+1] = c, off
	m.fillRow(t, left, 2*r, l+1, depth)
	m.fillRow(t, right, 2*r+1, l+1, depth)
}

// splitCarry is internal node i as the row kernel's word holds it (and the SHAP sweep's
// node): 2^32 - threshold key, which a row's key carries out of exactly when it goes
// right, and the byte offset of the key in a row's keys (laneKeys).
func (m *Model) splitCarry(i uint32) (carry, keyOffset uint32) {
	thr, key := m.splitKey(i)
	return uint32(1<<32 - uint64(thr)), key * 4 // thr > 0: 2^32 - thr fits
}

// rowWalk adds the trees' leaf values for one row to its margins in out, one per
// output group.
func (m *Model) rowWalk(out, row []float32) {
	if 2*len(row) <= rowStackKeys {
		var keys [rowStackKeys]uint32
		m.rowWalkKeys(out, row, keys[:2*len(row)])
		return
	}
	s := scratchPool.Get().(*scratch)
	s.keys = growKeys(s.keys, 2*len(row))
	m.rowWalkKeys(out, row, s.keys)
	scratchPool.Put(s)
}

// rowStackKeys is how many keys (two a feature) rowWalk keeps on its stack instead of
// taking a scratch from the pool: a Get and a Put cost more than zeroing 512 bytes.
const rowStackKeys = 128

// rowWalkKeys is rowWalk with room for the row's keys.
func (m *Model) rowWalkKeys(out, row []float32, keys []uint32) {
	laneKeys(keys, row)
	outs := m.row.outs
	for g := range out {
		if lo, hi := outs[g], outs[g+1]; lo < hi {
			out[g] = rowSum(&m.row.words[0], &m.row.groups[lo], hi-lo, &keys[0], out[g])
		}
	}
}

// laneKeys writes the keys of one row for one lane (rowKeys with n = 1) into
// keys[:2*len(row)], with AVX-512 where the CPU has it.
func laneKeys(keys []uint32, row []float32) {
	if haveWide && len(row) > 0 {
		rowKeys1(&row[0], len(row), &keys[0])
	} else {
		rowKeys(keys, row, 0, 1)
	}
}
