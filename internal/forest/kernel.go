package forest

import (
	"math"
	"unsafe"
)

// The margin kernels compare integers instead of floats. Each row is first turned into
// "keys": the float32 bits mapped so that unsigned order equals float order
// (x < s  <=>  key(x) < key(s) for every non-NaN x, s). A row gets two copies of its
// keys: in the first a missing value has key 0 (below every threshold: goes left), in
// the second 0xFFFFFFFF (above every threshold: goes right). Each node's feature
// offset points into the copy matching its default direction, so a step is
//
//	right = keys[feat] >= thr
//
// with no missing-value test and no branch. Leaves have thr = 0xFFFFFFFF and read the
// first copy, where no key reaches it, so they map to themselves.
//
// The kernels also skip bounds checks (about a third of a step's instructions); every
// access stays in bounds because of what build and Predict establish:
//   - flattenTree only creates child indices of nodes it appended, so every offset a
//     walk can reach (root, left, left+1 of an internal node, a leaf itself) lies
//     inside m.fast;
//   - flattenTree rejects split_indices outside [0, num_feature), so feature offsets
//     lie inside the 2*num_feature keys of a row;
//   - Predict checks len(rows) == nrows*numFeature before any kernel runs, and the key
//     buffers are sized from it.
// Models with categorical splits never reach these kernels (see margins).

// fastNode is node for the key kernels; offsets are in bytes so a step needs no
// multiplication.
type fastNode struct {
	thr   uint32  // key of the threshold; 0xFFFFFFFF for leaves
	feat  uint32  // byte offset of the feature's key in a row's keys
	left  uint32  // byte offset of the left child in Model.fast; leaves: their own
	value float32 // leaf value (times the dart weight)
}

const fastNodeSize = uint32(unsafe.Sizeof(fastNode{}))

// floatKey maps a non-NaN float32 to a uint32 with the same order; -0 and +0 share a
// key because they compare equal.
func floatKey(v float32) uint32 {
	if v == 0 {
		return 1 << 31
	}
	b := math.Float32bits(v)
	return b ^ (uint32(int32(b)>>31) | 1<<31)
}

// buildFast derives the key kernels' nodes from m.nodes.
func (m *Model) buildFast() {
	m.fast = make([]fastNode, len(m.nodes))
	nf := uint32(m.numFeature)
	for i, n := range m.nodes {
		f := &m.fast[i]
		f.left = n.left * fastNodeSize
		f.value = n.value
		if n.left == uint32(i) {
			f.thr = math.MaxUint32
			continue
		}
		switch {
		case n.split != n.split:
			// x < NaN is false for every x: non-missing values go right.
			f.thr = 1
		default:
			f.thr = floatKey(n.split)
		}
		f.feat = n.feat * 4
		if m.flags[i]&flagMissRight != 0 {
			f.feat = (n.feat + nf) * 4
		}
	}
}

// rowKeys writes the 2*len(row) keys of a row.
func rowKeys(keys []uint32, row []float32) {
	nf := len(row)
	keys = keys[:2*nf]
	for f, v := range row {
		if v != v {
			keys[f] = 0
			keys[nf+f] = math.MaxUint32
			continue
		}
		k := floatKey(v)
		keys[f] = k
		keys[nf+f] = k
	}
}

func step(nodes, keys unsafe.Pointer, off uint32) uint32 {
	n := (*fastNode)(unsafe.Add(nodes, uintptr(off)))
	k := *(*uint32)(unsafe.Add(keys, uintptr(n.feat)))
	// Written so the compiler emits SETcc, not a branch: the direction is a coin flip
	// a branch predictor cannot learn.
	r := uint32(0)
	if k >= n.thr {
		r = 1
	}
	return n.left + r*fastNodeSize
}

func leafAt(nodes unsafe.Pointer, off uint32) float32 {
	return (*fastNode)(unsafe.Add(nodes, uintptr(off))).value
}

// stackKeys is how many keys a row may need for rowMargins to keep them on the stack.
const stackKeys = 128

// rowMargins evaluates one row, walking eight trees at once: one walk is a chain of
// dependent loads, and independent chains keep the core busy while each waits. Leaf
// values are still added in tree order, as XGBoost adds them.
func (m *Model) rowMargins(out, row []float32) {
	if len(m.fast) == 0 {
		return
	}
	var buf [stackKeys]uint32
	var keys []uint32
	if 2*len(row) <= stackKeys {
		keys = buf[:2*len(row)]
	} else {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		s.keys = growKeys(s.keys, 2*len(row))
		keys = s.keys
	}
	rowKeys(keys, row)
	nodes := unsafe.Pointer(&m.fast[0])
	kp := unsafe.Pointer(&keys[0])
	trees := m.trees
	t := 0
	for ; t+8 <= len(trees); t += 8 {
		ts := trees[t : t+8 : t+8]
		i0, i1, i2, i3 := ts[0].root*fastNodeSize, ts[1].root*fastNodeSize, ts[2].root*fastNodeSize, ts[3].root*fastNodeSize
		i4, i5, i6, i7 := ts[4].root*fastNodeSize, ts[5].root*fastNodeSize, ts[6].root*fastNodeSize, ts[7].root*fastNodeSize
		d := max(ts[0].depth, ts[1].depth, ts[2].depth, ts[3].depth, ts[4].depth, ts[5].depth, ts[6].depth, ts[7].depth)
		for ; d > 0; d-- {
			i0 = step(nodes, kp, i0)
			i1 = step(nodes, kp, i1)
			i2 = step(nodes, kp, i2)
			i3 = step(nodes, kp, i3)
			i4 = step(nodes, kp, i4)
			i5 = step(nodes, kp, i5)
			i6 = step(nodes, kp, i6)
			i7 = step(nodes, kp, i7)
		}
		out[ts[0].group] += leafAt(nodes, i0)
		out[ts[1].group] += leafAt(nodes, i1)
		out[ts[2].group] += leafAt(nodes, i2)
		out[ts[3].group] += leafAt(nodes, i3)
		out[ts[4].group] += leafAt(nodes, i4)
		out[ts[5].group] += leafAt(nodes, i5)
		out[ts[6].group] += leafAt(nodes, i6)
		out[ts[7].group] += leafAt(nodes, i7)
	}
	for ; t < len(trees); t++ {
		tr := &trees[t]
		i := tr.root * fastNodeSize
		for d := tr.depth; d > 0; d-- {
			i = step(nodes, kp, i)
		}
		out[tr.group] += leafAt(nodes, i)
	}
}

func growKeys(k []uint32, n int) []uint32 {
	if cap(k) < n {
		return make([]uint32, n)
	}
	return k[:n]
}

// blockMargins evaluates rows block by block: blockRows rows walk a pair of trees
// before the next pair is taken, so the pair's nodes and the block's keys stay in L1.
// Within a block two trees walk four rows at once (eight independent walks).
func (m *Model) blockMargins(out, rows []float32, nrows int) {
	if len(m.fast) == 0 {
		return
	}
	nf, ng := m.numFeature, m.numGroup
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	br := blockRowsFor(2 * nf)
	s.keys = growKeys(s.keys, br*2*nf)
	nodes := unsafe.Pointer(&m.fast[0])
	trees := m.trees
	stride := uintptr(2*nf) * 4
	for b := 0; b < nrows; b += br {
		e := min(b+br, nrows)
		for r := b; r < e; r++ {
			rowKeys(s.keys[(r-b)*2*nf:], rows[r*nf:(r+1)*nf])
		}
		kb := unsafe.Pointer(&s.keys[0])
		t := 0
		for ; t+2 <= len(trees); t += 2 {
			ta, tb := &trees[t], &trees[t+1]
			ga, gb := int(ta.group), int(tb.group)
			ra, rb := ta.root*fastNodeSize, tb.root*fastNodeSize
			d := max(ta.depth, tb.depth)
			r := b
			for ; r+4 <= e; r += 4 {
				k0 := unsafe.Add(kb, uintptr(r-b)*stride)
				k1 := unsafe.Add(k0, stride)
				k2 := unsafe.Add(k1, stride)
				k3 := unsafe.Add(k2, stride)
				a0, a1, a2, a3 := ra, ra, ra, ra
				b0, b1, b2, b3 := rb, rb, rb, rb
				for k := d; k > 0; k-- {
					a0 = step(nodes, k0, a0)
					a1 = step(nodes, k1, a1)
					a2 = step(nodes, k2, a2)
					a3 = step(nodes, k3, a3)
					b0 = step(nodes, k0, b0)
					b1 = step(nodes, k1, b1)
					b2 = step(nodes, k2, b2)
					b3 = step(nodes, k3, b3)
				}
				o := out[r*ng : (r+4)*ng : (r+4)*ng]
				o[ga] += leafAt(nodes, a0)
				o[gb] += leafAt(nodes, b0)
				o[ng+ga] += leafAt(nodes, a1)
				o[ng+gb] += leafAt(nodes, b1)
				o[2*ng+ga] += leafAt(nodes, a2)
				o[2*ng+gb] += leafAt(nodes, b2)
				o[3*ng+ga] += leafAt(nodes, a3)
				o[3*ng+gb] += leafAt(nodes, b3)
			}
			for ; r < e; r++ {
				kp := unsafe.Add(kb, uintptr(r-b)*stride)
				a, c := ra, rb
				for k := d; k > 0; k-- {
					a = step(nodes, kp, a)
					c = step(nodes, kp, c)
				}
				out[r*ng+ga] += leafAt(nodes, a)
				out[r*ng+gb] += leafAt(nodes, c)
			}
		}
		for ; t < len(trees); t++ {
			tr := &trees[t]
			g := int(tr.group)
			for r := b; r < e; r++ {
				kp := unsafe.Add(kb, uintptr(r-b)*stride)
				i := tr.root * fastNodeSize
				for k := tr.depth; k > 0; k-- {
					i = step(nodes, kp, i)
				}
				out[r*ng+g] += leafAt(nodes, i)
			}
		}
	}
}
