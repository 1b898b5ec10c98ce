package forest

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Path-based TreeSHAP with precomputed leaf tables ("Fast TreeSHAP v2", Yang 2021,
// arXiv:2109.09847). Exact TreeSHAP (shap.go) gives the same values, but redoes per
// row work that depends only on the tree.
//
// For one leaf with value v, let F be the distinct features split on along its path
// (n of them), z_k the product of the cover fractions (child hessian / parent
// hessian) of the path's edges on feature k, and U the features whose every edge
// the row follows. The leaf's share of feature j's SHAP value is
//
//	j in U:      v * (1 - z_j) * Zout(U) * G(U \ {j})
//	j not in U: -v * Zout(U) * G(U)
//
// where Zout(U) is the product of z_k over k not in U and
//
//	G(T) = sum over S subset of T of  |S|! (n-|S|-1)! / n!  *  product of z_k, k in T \ S.
//
// Only U depends on the row. So at load each leaf gets a table over all 2^n patterns U,
// and a row costs one pass over the tree's nodes (to find each leaf's U) and O(n) per
// leaf, instead of O(n^2) per leaf plus O(depth) per node.
//
// The table holds H(U) = Zout(U) * G(U), so that both cases read one entry and
// multiply by one coefficient: Zout(U \ {j}) = z_j * Zout(U) for j in U, hence
//
//	j in U:      v * (1 - z_j) / z_j * H(U \ {j})
//	j not in U: -v * H(U)               = -v * H(U \ {j}), as U \ {j} = U
//
// a coefficient picked by whether j is in U, times H at U without j. That is a third
// of the per-leaf operations of multiplying Zout(U) out per row. It needs every z_j
// above 0 and the product of all of them far from float32's smallest numbers, or
// H(U) would lose digits: leaves whose cover fractions multiply to under 2^-100 (a
// child with no hessian, say) keep tables of G(U) and multiply Zout(U) out per row.
// Tables take 2^n float32 per leaf (a 64-leaf tree of depth 6: 16 KiB, within L1):
// trees whose tables exceed the caps keep the recursive algorithm.

const (
	// maxPathFeatures caps n per leaf: a table of 2^12 entries is 16 KiB.
	maxPathFeatures = 12
	// maxPathEntries caps the table entries of a whole model (32 MiB).
	maxPathEntries = 1 << 23
	// maxPathLeafFeatures caps the path features of the tabled leaves of a whole
	// model, 24 bytes each (coefficients, fraction, feature): 48 MiB. Their trees'
	// internal nodes, 16 bytes each for keySweep, are fewer than their leaves: at most
	// 32 MiB more. (1000 trees of depth 8 and 8 path features a leaf take 2^21.)
	maxPathLeafFeatures = 1 << 21
	// maxPathTreeNodes caps the nodes of a tabled tree: a row's sweep keeps a word
	// per node (256 KiB of scratch per call at the cap).
	maxPathTreeNodes = 1 << 16
	// minScaledCover is the smallest product of a leaf's cover fractions whose table
	// holds H(U): H(U) >= that product times G's smallest value (above 2^-13 for n up
	// to 12), a normal float32 (2^-126 and up) with all its digits.
	minScaledCover = 0x1p-100
)

// pathLeaf is one leaf of a tabled tree.
type pathLeaf struct {
	v    float64 // leaf value times the tree's dart weight
	node uint32  // flat node index, relative to the tree's root
	n    uint32  // distinct features on the path
	off  uint32  // offset into pathShap.zero, and twice that into coef: n entries, in path order
	tab  uint32  // offset into pathShap.table: 2^n entries
	feat uint32  // offset into pathShap.feats: n entries, shared by the tree's leaves with the same features in the same order
	_    uint32  // 32 bytes, for shapLeaves8
}

// pathTree says how a tree's contributions are computed.
type pathTree struct {
	tabled bool
	scaled []pathLeaf  // leaves whose tables hold H(U)
	small  []pathLeaf  // leaves whose tables hold G(U): their cover fractions multiply to under minScaledCover
	wide   int         // the leading scaled leaves with at most 8 path features (shapLeaves8's)
	nodes  uint32      // nodes in the tree
	sweep  []sweepNode // the internal nodes, parents first; nil in models with categorical splits
}

// sweepNode is an internal node of a tabled tree as keySweep reads it: the row kernel's
// comparison (kernel_row.go) on kernel.go's keys of one row, so missing values go the
// node's default way.
type sweepNode struct {
	carry uint32 // 2^32 - threshold key: key + carry carries when the row goes right
	key   uint32 // byte offset of the node's key
	bit   uint32 // 1 << the node's feature's position on the path
	self  uint16 // the node, relative to the tree's root (tabled trees have at most 2^16 nodes)
	left  uint16 // its left child, relative to the root
}

type pathShap struct {
	trees    []pathTree
	feats    []int32   // per leaf: its path features, in order of first appearance (shared, see pathLeaf.feat)
	zero     []float32 // per leaf feature j: z_j
	coef     []float64 // per leaf feature j: -v and v * (1 - z_j) / z_j (0 for a small leaf)
	table    []float32 // per leaf: H(U), or G(U) for a small leaf, for every pattern U
	bit      []uint8   // per flat node of a tabled tree: its feature's position on the path
	maxNodes int       // nodes of the largest tabled tree
	bias     []float32 // per group: sum of the trees' expected values, plus the base margin
	rowCost  int       // rough operations per row, for chunking
}

// newPathShap builds the tables of every tree that fits the caps.
func newPathShap(m *Model) *pathShap {
	sd := m.shap
	ps := &pathShap{trees: make([]pathTree, len(m.trees)), bit: make([]uint8, len(m.nodes))}
	// The bias column adds each tree's mean in XGBoost's order and precision.
	ps.bias = make([]float32, m.numGroup)
	for g := range ps.bias {
		for t := range m.trees {
			if int(m.trees[t].group) != g {
				continue
			}
			w := float32(1)
			if sd.weight != nil {
				w = sd.weight[t]
			}
			ps.bias[g] += sd.mean[m.trees[t].root] * w
		}
		ps.bias[g] += m.baseMargin[g]
	}
	// First the sizes, so that the tables are allocated once: trees are tabled in
	// order while they fit the caps.
	var b pathBuilder
	fits := make([]bool, len(m.trees))
	entries, feats := 0, 0
	for t := range m.trees {
		root, end := m.treeNodes(t)
		e, f, ok := b.count(m, root, end)
		if ok && entries+e <= maxPathEntries && feats+f <= maxPathLeafFeatures {
			fits[t] = true
			entries += e
			feats += f
		}
	}
	ps.table = make([]float32, 0, entries)
	ps.feats = make([]int32, 0, feats)
	ps.zero = make([]float32, 0, feats)
	ps.coef = make([]float64, 0, 2*feats)
	for t := range m.trees {
		tr := &m.trees[t]
		root, end := m.treeNodes(t)
		pt := &ps.trees[t]
		pt.nodes = end - root
		if !fits[t] {
			d := int(tr.depth)
			ps.rowCost += int(pt.nodes) * (d*d + d)
			continue
		}
		w := float64(1)
		if sd.weight != nil {
			w = float64(sd.weight[t])
		}
		b.build(m, ps, root, end, w)
		pt.tabled = true
		if !m.hasCat {
			for i := root; i < end; i++ {
				if m.isLeaf(i) {
					continue
				}
				carry, key := m.splitCarry(i)
				pt.sweep = append(pt.sweep, sweepNode{
					carry: carry,
					key:   key,
					bit:   1 << ps.bit[i],
					self:  uint16(i - root),
					left:  uint16(m.nodes[i].left - root),
				})
			}
		}
		// Leaves with as many path features follow each other, so the loops over a
		// leaf's features run the same number of times leaf after leaf and their
		// exits are predicted; among them, leaves with the same features (siblings,
		// at least) follow each other, so their shares are added up before phi.
		byFeatures := func(x, y pathLeaf) int { return cmp.Or(cmp.Compare(x.n, y.n), cmp.Compare(x.feat, y.feat)) }
		pt.scaled = slices.SortedStableFunc(slices.Values(b.scaled), byFeatures)
		pt.small = slices.SortedStableFunc(slices.Values(b.small), byFeatures)
		for pt.wide < len(pt.scaled) && pt.scaled[pt.wide].n <= 8 {
			pt.wide++
		}
		ps.maxNodes = max(ps.maxNodes, int(pt.nodes))
		ps.rowCost += int(pt.nodes)
		for _, l := range pt.scaled {
			ps.rowCost += int(l.n)
		}
		for _, l := range pt.small {
			ps.rowCost += 2 * int(l.n)
		}
	}
	return ps
}

// treeNodes is the flat node range [root, end) of tree t.
func (m *Model) treeNodes(t int) (root, end uint32) {
	root, end = m.trees[t].root, uint32(len(m.nodes))
	if t+1 < len(m.trees) {
		end = m.trees[t+1].root
	}
	return root, end
}

// pathBuilder holds scratch reused across trees while tables are built.
type pathBuilder struct {
	scaled []pathLeaf
	small  []pathLeaf
	parent []uint32          // per node of the tree: its parent
	path   []uint32          // a leaf and its ancestors below the root, leaf first
	feats  []int32           // distinct features on the path
	zero   []float32         // their cover fractions
	lists  map[string]uint32 // a tree's path feature lists so far (their bytes) to their offset in pathShap.feats
	key    []byte
	e      []float64 // elementary symmetric polynomials per subset
	in     []float64 // per subset: the product of its fractions
}

// pathTo fills b.path with the nodes from leaf up to, not including, root.
func (b *pathBuilder) pathTo(root, leaf uint32) {
	b.path = b.path[:0]
	for i := leaf; i != root; i = b.parent[i-root] {
		b.path = append(b.path, i)
	}
}

// parents fills b.parent for the tree [root, end).
func (b *pathBuilder) parents(m *Model, root, end uint32) {
	b.parent = growU32(b.parent, int(end-root))
	for i := root; i < end; i++ {
		if !m.isLeaf(i) {
			l := m.nodes[i].left
			b.parent[l-root] = i
			b.parent[l+1-root] = i
		}
	}
}

// count returns the table entries and path features the tree [root, end) needs, and
// whether it fits the per-tree caps.
func (b *pathBuilder) count(m *Model, root, end uint32) (entries, feats int, ok bool) {
	if end-root > maxPathTreeNodes {
		return 0, 0, false
	}
	b.parents(m, root, end)
	for i := root; i < end; i++ {
		if !m.isLeaf(i) {
			continue
		}
		b.pathTo(root, i)
		b.feats = b.feats[:0]
		for _, c := range b.path {
			if f := int32(m.nodes[b.parent[c-root]].feat); indexOf(b.feats, f) < 0 {
				b.feats = append(b.feats, f)
			}
		}
		if len(b.feats) > maxPathFeatures {
			return 0, 0, false
		}
		entries += 1 << len(b.feats)
		feats += len(b.feats)
	}
	return entries, feats, true
}

// build appends the tables of the tree [root, end), which count found to fit, and
// leaves its leaves in b.scaled and b.small.
func (b *pathBuilder) build(m *Model, ps *pathShap, root, end uint32, weight float64) {
	b.parents(m, root, end)
	b.scaled, b.small = b.scaled[:0], b.small[:0]
	if b.lists == nil {
		b.lists = make(map[string]uint32)
	}
	clear(b.lists)
	hess := m.shap.hess
	for i := root; i < end; i++ {
		if !m.isLeaf(i) {
			continue
		}
		b.pathTo(root, i)
		b.feats = b.feats[:0]
		b.zero = b.zero[:0]
		for p := len(b.path) - 1; p >= 0; p-- {
			c := b.path[p]
			par := b.parent[c-root]
			f := int32(m.nodes[par].feat)
			pos := indexOf(b.feats, f)
			if pos < 0 {
				pos = len(b.feats)
				b.feats = append(b.feats, f)
				b.zero = append(b.zero, 1)
			}
			// A node's position depends only on the path above it, the same for
			// every leaf below.
			ps.bit[par] = uint8(pos)
			// As XGBoost: the fraction in float32, times the fraction of an
			// earlier edge on the same feature.
			b.zero[pos] = hess[c] / hess[par] * b.zero[pos]
		}
		n := len(b.feats)
		pl := pathLeaf{v: float64(m.shap.leaf[i]) * weight, node: i - root, n: uint32(n), off: uint32(len(ps.zero)), tab: uint32(len(ps.table))}
		b.key = b.key[:0]
		for _, f := range b.feats {
			b.key = binary.LittleEndian.AppendUint32(b.key, uint32(f))
		}
		if off, ok := b.lists[string(b.key)]; ok {
			pl.feat = off
		} else {
			pl.feat = uint32(len(ps.feats))
			b.lists[string(b.key)] = pl.feat
			ps.feats = append(ps.feats, b.feats...)
		}
		ps.zero = append(ps.zero, b.zero...)
		ps.table = append(ps.table, make([]float32, 1<<n)...)
		cover := 1.0
		for _, z := range b.zero {
			cover *= float64(z)
		}
		// Also false for a NaN fraction (a node without hessian).
		scaled := cover >= minScaledCover
		for _, z := range b.zero {
			if scaled {
				ps.coef = append(ps.coef, -pl.v, pl.v*(1-float64(z))/float64(z))
			} else {
				ps.coef = append(ps.coef, 0, 0)
			}
		}
		b.fill(ps.table[pl.tab:pl.tab+1<<n], n, scaled)
		if scaled {
			b.scaled = append(b.scaled, pl)
		} else {
			b.small = append(b.small, pl)
		}
	}
}

func growU32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}

// fill writes a leaf's table for the n fractions in b.zero: H(U) if scaled, else G(U).
func (b *pathBuilder) fill(tab []float32, n int, scaled bool) {
	size := 1 << n
	// e[T][m]: elementary symmetric polynomial of degree m of z over T, built by
	// adding T's lowest feature to T without it.
	stride := n + 1
	if cap(b.e) < size*stride {
		b.e = make([]float64, size*stride)
	}
	e := b.e[:size*stride]
	for i := range e {
		e[i] = 0
	}
	if cap(b.in) < size {
		b.in = make([]float64, size)
	}
	in := b.in[:size]
	e[0], in[0] = 1, 1
	for t := 1; t < size; t++ {
		j := lowBit(t)
		without := t &^ (1 << j)
		prev := e[without*stride:]
		cur := e[t*stride:]
		z := float64(b.zero[j])
		cur[0] = prev[0]
		for d := 1; d <= n; d++ {
			cur[d] = prev[d] + z*prev[d-1]
		}
		in[t] = in[without] * z
	}
	for u := 0; u < size; u++ {
		k := popcount(u)
		cur := e[u*stride:]
		var g float64
		// G(U) = sum over s = |S| of w(s) * e_{|U|-s}(z_U).
		for s := 0; s <= k && s < n; s++ {
			g += shapleyWeights[n][s] * cur[k-s]
		}
		if scaled {
			g *= in[(size-1)^u] // Zout(U): the fractions of the features not in U
		}
		tab[u] = float32(g)
	}
}

// shapleyWeights[n][s] is s! (n-s-1)! / n!, for paths of n distinct features;
// factorials up to maxPathFeatures are exact in float64.
var shapleyWeights = func() (w [maxPathFeatures + 1][]float64) {
	fact := func(n int) float64 {
		f := 1.0
		for i := 2; i <= n; i++ {
			f *= float64(i)
		}
		return f
	}
	for n := 1; n <= maxPathFeatures; n++ {
		for s := 0; s < n; s++ {
			w[n] = append(w[n], fact(s)*fact(n-s-1)/fact(n))
		}
	}
	return w
}()

func lowBit(x int) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func indexOf(s []int32, v int32) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
