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
// with no missing-value test and no branch. A node stores not thr but c = 2^32 - thr
// next to its left child's index, so one 64-bit addition does the comparison and the
// choice of child: k + c carries into the child index exactly when k >= thr,
//
//	child = (k + (left<<32 | c)) >> 32
//
// Leaves have c = 0, which no key carries: they map to themselves.
//
// Keys are laid out for lanes rows at once: key (copy c, feature f) of the row in
// lane j sits at index (c*nf+f)*lanes + j. The batch kernel walks a tree for lanes
// rows together, all their keys addressed from one base pointer plus the node's
// offset plus a constant per lane: that keeps the eight walks (chains of dependent
// loads the core overlaps) in registers. A single row uses lane 0. Models with rows
// so wide that a lane group's keys would exceed scratchBudget use one lane (m.lanes),
// and rows walk one by one.
//
// The kernels also skip bounds checks (about a third of a step's instructions); every
// access stays in bounds because of what build and Predict establish:
//   - flattenTree only creates child indices of nodes it appended, so every offset a
//     walk can reach (root, left, left+1 of an internal node, a leaf itself) lies
//     inside m.fast's arrays;
//   - flattenTree rejects split_indices outside [0, num_feature), so feature offsets
//     lie inside the 2*num_feature*lanes keys of a lane group;
//   - Predict checks len(rows) == nrows*numFeature before any kernel runs, and the key
//     buffers are sized from it.
// Models with categorical splits never reach these kernels (see margins).

// fastTrees holds the nodes for the key kernels as parallel arrays indexed by flat
// node index, so a step addresses both with the index scaled by the CPU's addressing
// (4 and 8 bytes) and needs no multiplication of its own.
type fastTrees struct {
	// Byte offset of the node's feature's lane-0 key in a lane group's keys: in
	// feat16 when every offset fits 16 bits (up to 1024 features), else in feat32.
	// The walks' critical path runs through this load; 2 bytes a node keep more of
	// the model in L1.
	feat16 []uint16
	feat32 []uint32
	// left<<32 | c: the index of the left child (leaves: their own) and 2^32 - the key
	// of the threshold (leaves: 0).
	cl    []uint64
	value []float32 // leaf value (times the dart weight)
}

// lanes is how many rows walk a tree together in the batch kernel.
const lanes = 8

// floatKey maps a non-NaN float32 to a uint32 with the same order; -0 and +0 share a
// key because they compare equal. See bitsKey.
func floatKey(v float32) uint32 { return bitsKey(math.Float32bits(v)) }

// bitsKey is floatKey of the float32 with bits b, in integer operations only and
// without a branch (rowKeys runs it for every value of every row): a non-negative
// value's bits with the top bit set, a negative value's bits negated, which is
// 1<<31 for -0 as for +0 and falls as the value falls.
func bitsKey(b uint32) uint32 {
	neg := uint32(int32(b) >> 31)
	return (b ^ neg) - neg + (^neg & (1 << 31))
}

// splitKey is internal node i's comparison in keys: the threshold's key, which every key
// of a value at or above the threshold reaches, and the row key's copy index: the
// feature in the copy of the node's default direction (f, or numFeature+f where missing
// values go right). Thresholds are keys of non-NaN values, at least key(-Inf) > 0.
func (m *Model) splitKey(i uint32) (thr, key uint32) {
	n := &m.nodes[i]
	thr = 1 // x < NaN is false for every x: non-missing values go right
	if n.split == n.split {
		thr = floatKey(n.split)
	}
	key = n.feat
	if m.flags[i]&flagMissRight != 0 {
		key += uint32(m.numFeature)
	}
	return thr, key
}

// buildFast derives the key kernels' nodes from m.nodes.
func (m *Model) buildFast() {
	m.lanes = lanes
	if 2*m.numFeature*lanes > scratchBudget {
		m.lanes = 1
	}
	f := fastTrees{
		cl:    make([]uint64, len(m.nodes)),
		value: make([]float32, len(m.nodes)),
	}
	feat := make([]uint32, len(m.nodes))
	for i, n := range m.nodes {
		f.value[i] = n.value
		f.cl[i] = uint64(n.left) << 32
		if n.left == uint32(i) {
			continue
		}
		thr, key := m.splitKey(uint32(i))
		f.cl[i] |= 1<<32 - uint64(thr) // thr > 0: c fits
		feat[i] = key * uint32(m.lanes) * 4
	}
	if 2*m.numFeature*m.lanes*4 <= 1<<16 {
		f.feat16 = make([]uint16, len(feat))
		for i, v := range feat {
			f.feat16[i] = uint16(v)
		}
	} else {
		f.feat32 = feat
	}
	m.fast = f
	m.buildWide()
	m.buildRow()
}

// rowKeys writes the keys of a row into lane of a group of n lanes' keys. A missing
// value's keys are chosen without a branch: which values are missing is as hard to
// predict as the walks' directions.
func rowKeys(keys []uint32, row []float32, lane, n int) {
	nf := len(row)
	keys = keys[:2*nf*n]
	if lane < 0 || lane >= n {
		panic("forest: rowKeys lane out of range")
	}
	// Every store lies inside keys[:2*nf*n]: f < nf and lane < n. The addresses are
	// computed from the start, not stepped: a step past the last key would point past
	// the buffer, which the race detector's pointer checks refuse.
	lo := unsafe.Pointer(&keys[lane])
	hi := unsafe.Add(lo, nf*n*4)
	for f, v := range row {
		b := math.Float32bits(v)
		k := bitsKey(b)
		var miss uint32
		if b&^(1<<31) > 0x7f800000 { // NaN
			miss = math.MaxUint32
		}
		// Not missing: k in both copies; missing: 0 (goes left) and 0xFFFFFFFF (right).
		*(*uint32)(unsafe.Add(lo, f*n*4)) = k &^ miss
		*(*uint32)(unsafe.Add(hi, f*n*4)) = k | miss
	}
}

// step takes one step down a tree for the row in lane, from node i to the child it
// returns. No branch (the direction is a coin flip a branch predictor cannot learn)
// and no compare: the compiler schedules flag-setting compares late, after the loads
// of all eight walks, and runs out of registers.
func step[F featOffset](feat, cl, keys unsafe.Pointer, i uintptr, lane uintptr) uintptr {
	f := *(*F)(unsafe.Add(feat, i*unsafe.Sizeof(F(0))))
	k := uint64(*(*uint32)(unsafe.Add(keys, uintptr(f)+lane*4)))
	return uintptr((k + *(*uint64)(unsafe.Add(cl, i*8))) >> 32)
}

// rowMargins evaluates one row: with the row kernel where the model has its layout,
// else with the scalar kernel.
func (m *Model) rowMargins(out, row []float32) {
	if m.row.groups != nil {
		m.rowWalk(out, row) // kernel_row.go
		return
	}
	m.rowMarginsScalar(out, row)
}

// rowMarginsScalar evaluates one row, walking eight trees at once: one walk is a chain
// of dependent loads, and independent chains keep the core busy while each waits. Leaf
// values are still added in tree order, as XGBoost adds them.
func (m *Model) rowMarginsScalar(out, row []float32) {
	if m.fast.feat16 != nil {
		rowMarginsF[uint16](m, out, row, unsafe.Pointer(unsafe.SliceData(m.fast.feat16)))
	} else {
		rowMarginsF[uint32](m, out, row, unsafe.Pointer(unsafe.SliceData(m.fast.feat32)))
	}
}

// featOffset is the type of the feature offsets a model's nodes hold.
type featOffset interface{ uint16 | uint32 }

func rowMarginsF[F featOffset](m *Model, out, row []float32, fp unsafe.Pointer) {
	if len(m.fast.cl) == 0 {
		return
	}
	// Keys come from the pool even when they would fit on the stack: Go zeroes a stack
	// buffer on every call, and for 20 features (eight lanes apart) zeroing it and the
	// stores waiting behind that took about half the time of a 16-tree model.
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.keys = growKeys(s.keys, 2*len(row)*m.lanes)
	keys := s.keys
	rowKeys(keys, row, 0, m.lanes)
	cp, val := unsafe.Pointer(&m.fast.cl[0]), m.fast.value
	kp := unsafe.Pointer(&keys[0])
	trees := m.trees
	// With one output group the margin is summed in a register: added through out[0],
	// each tree's addition waits for the store of the one before (a chain of some eight
	// cycles a tree, longer than the walks it follows).
	single := len(out) == 1
	acc := out[0]
	t := 0
	for ; t+8 <= len(trees); t += 8 {
		ts := trees[t : t+8 : t+8]
		i0, i1, i2, i3 := uintptr(ts[0].root), uintptr(ts[1].root), uintptr(ts[2].root), uintptr(ts[3].root)
		i4, i5, i6, i7 := uintptr(ts[4].root), uintptr(ts[5].root), uintptr(ts[6].root), uintptr(ts[7].root)
		d := max(ts[0].depth, ts[1].depth, ts[2].depth, ts[3].depth, ts[4].depth, ts[5].depth, ts[6].depth, ts[7].depth)
		for ; d > 0; d-- {
			i0 = step[F](fp, cp, kp, i0, 0)
			i1 = step[F](fp, cp, kp, i1, 0)
			i2 = step[F](fp, cp, kp, i2, 0)
			i3 = step[F](fp, cp, kp, i3, 0)
			i4 = step[F](fp, cp, kp, i4, 0)
			i5 = step[F](fp, cp, kp, i5, 0)
			i6 = step[F](fp, cp, kp, i6, 0)
			i7 = step[F](fp, cp, kp, i7, 0)
		}
		if single {
			acc += val[i0]
			acc += val[i1]
			acc += val[i2]
			acc += val[i3]
			acc += val[i4]
			acc += val[i5]
			acc += val[i6]
			acc += val[i7]
			continue
		}
		out[ts[0].group] += val[i0]
		out[ts[1].group] += val[i1]
		out[ts[2].group] += val[i2]
		out[ts[3].group] += val[i3]
		out[ts[4].group] += val[i4]
		out[ts[5].group] += val[i5]
		out[ts[6].group] += val[i6]
		out[ts[7].group] += val[i7]
	}
	if single {
		out[0] = acc
	}
	for ; t < len(trees); t++ {
		tr := &trees[t]
		i := uintptr(tr.root)
		for d := tr.depth; d > 0; d-- {
			i = step[F](fp, cp, kp, i, 0)
		}
		out[tr.group] += val[i]
	}
}

func growKeys(k []uint32, n int) []uint32 {
	if cap(k) < n {
		return make([]uint32, n)
	}
	return k[:n]
}

// blockMargins evaluates rows block by block: the block's rows walk one tree before
// the next tree is taken, so the tree's nodes and the block's keys stay in L1. Within
// a block, eight rows (one lane group) walk the tree at once.
func (m *Model) blockMargins(out, rows []float32, nrows int) {
	if m.fast.feat16 != nil {
		blockMarginsF[uint16](m, out, rows, nrows, unsafe.Pointer(unsafe.SliceData(m.fast.feat16)))
	} else {
		blockMarginsF[uint32](m, out, rows, nrows, unsafe.Pointer(unsafe.SliceData(m.fast.feat32)))
	}
}

func blockMarginsF[F featOffset](m *Model, out, rows []float32, nrows int, fp unsafe.Pointer) {
	if len(m.fast.cl) == 0 {
		return
	}
	nf, ng := m.numFeature, m.numGroup
	if m.lanes != lanes {
		for r := 0; r < nrows; r++ {
			m.rowMargins(out[r*ng:(r+1)*ng], rows[r*nf:(r+1)*nf])
		}
		return
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	group := 2 * nf * lanes // keys of a lane group
	br := max(lanes, blockRowsFor(2*nf)/lanes*lanes)
	s.keys = growKeys(s.keys, br/lanes*group)
	cp, val := unsafe.Pointer(&m.fast.cl[0]), m.fast.value
	trees := m.trees
	for b := 0; b < nrows; b += br {
		e := min(b+br, nrows)
		ngroups := (e - b + lanes - 1) / lanes
		keys := s.keys[:ngroups*group]
		for r := b; r < b+ngroups*lanes; r++ {
			g := keys[(r-b)/lanes*group:]
			if r < e {
				rowKeys(g, rows[r*nf:(r+1)*nf], (r-b)%lanes, lanes)
			} else {
				// Lanes past the last row walk like lane 0 and are not added.
				rowKeys(g, rows[b*nf:(b+1)*nf], (r-b)%lanes, lanes)
			}
		}
		kb := unsafe.Pointer(&keys[0])
		for t := range trees {
			tr := &trees[t]
			gi := int(tr.group)
			root := uintptr(tr.root)
			for q := 0; q < ngroups; q++ {
				kp := unsafe.Add(kb, uintptr(q*group)*4)
				i0, i1, i2, i3, i4, i5, i6, i7 := walkLanes[F](fp, cp, kp, root, tr.depth)
				r := b + q*lanes
				if r+lanes <= e {
					o := out[r*ng : (r+lanes)*ng : (r+lanes)*ng]
					o[gi] += val[i0]
					o[ng+gi] += val[i1]
					o[2*ng+gi] += val[i2]
					o[3*ng+gi] += val[i3]
					o[4*ng+gi] += val[i4]
					o[5*ng+gi] += val[i5]
					o[6*ng+gi] += val[i6]
					o[7*ng+gi] += val[i7]
					continue
				}
				leaves := [lanes]uintptr{i0, i1, i2, i3, i4, i5, i6, i7}
				for j := 0; r+j < e; j++ {
					out[(r+j)*ng+gi] += val[leaves[j]]
				}
			}
		}
	}
}

// walkLanes walks a tree from root for the eight rows of a lane group and returns the
// leaves they reach. It is a function of its own so that the eight walks have the
// registers to themselves: inlined into blockMargins' loops, they spill.
//
//go:noinline
func walkLanes[F featOffset](fp, cp, kp unsafe.Pointer, root uintptr, depth int32) (i0, i1, i2, i3, i4, i5, i6, i7 uintptr) {
	i0, i1, i2, i3, i4, i5, i6, i7 = root, root, root, root, root, root, root, root
	for d := depth; d > 0; d-- {
		i0 = step[F](fp, cp, kp, i0, 0)
		i1 = step[F](fp, cp, kp, i1, 1)
		i2 = step[F](fp, cp, kp, i2, 2)
		i3 = step[F](fp, cp, kp, i3, 3)
		i4 = step[F](fp, cp, kp, i4, 4)
		i5 = step[F](fp, cp, kp, i5, 5)
		i6 = step[F](fp, cp, kp, i6, 6)
		i7 = step[F](fp, cp, kp, i7, 7)
	}
	return
}
