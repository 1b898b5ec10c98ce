package forest

import (
	"math/bits"
	"unsafe"
)

// SHAP contributions (pred_contribs). Trees whose leaf tables fit (shappath.go) use
// them; the others use exact TreeSHAP (Lundberg et al. 2018, Algorithm 2) as XGBoost
// implements it (RegTree::CalculateContributions), every operation float32 in the
// same order as XGBoost's. Both agree with XGBoost to float rounding.

type shapData struct {
	hess     []float32 // sum_hessian per flat node
	mean     []float32 // expected leaf value below each flat node (FillNodeMeanValues)
	leaf     []float32 // leaf value per flat node, without the dart weight
	weight   []float32 // per tree; nil means 1
	maxDepth int
	path     *pathShap // leaf tables (shappath.go)
}

type pathElem struct {
	feature int32
	zero    float32
	one     float32
	pweight float32
}

type shapScratch struct {
	path []pathElem
	tree []float32
	phi  []float64 // a block of rows' contributions
	cold []uint32  // per node of a tree: the path positions a row does not follow
}

// shapBlockRows is how many rows take each tree in turn, so a tree's tables stay in
// cache across the block.
const shapBlockRows = 32

// contribsChunk is how many rows of contributions cost about a millisecond, counting
// a nanosecond per operation of pathShap.rowCost.
func (m *Model) contribsChunk() int {
	if m.shap == nil {
		return 1024
	}
	return max(1, min(1024, 1_000_000/max(1, m.shap.path.rowCost)))
}

func newShapData(m *Model, raw *rawModel, weights []float32) *shapData {
	s := &shapData{
		hess:   make([]float32, len(m.nodes)),
		mean:   make([]float32, len(m.nodes)),
		leaf:   make([]float32, len(m.nodes)),
		weight: weights,
	}
	for t := range m.trees {
		tr := &m.trees[t]
		s.maxDepth = max(s.maxDepth, int(tr.depth))
		end := len(m.nodes)
		if t+1 < len(m.trees) {
			end = int(m.trees[t+1].root)
		}
		rt := &raw.trees[t]
		for i := int(tr.root); i < end; i++ {
			id := m.nodeID[i]
			s.hess[i] = rt.sumHess[id]
			if rt.left[id] == -1 {
				s.leaf[i] = rt.splitCond[id]
			}
		}
		// Children follow their parents in the flat order, so a reverse sweep sees
		// both children before the parent.
		for i := end - 1; i >= int(tr.root); i-- {
			if rt.left[m.nodeID[i]] == -1 {
				s.mean[i] = s.leaf[i]
				continue
			}
			l := m.nodes[i].left
			v := s.mean[l] * s.hess[l]
			v += s.mean[l+1] * s.hess[l+1]
			v /= s.hess[i]
			s.mean[i] = v
		}
	}
	return s
}

func (m *Model) isLeaf(i uint32) bool { return m.nodes[i].left == i }

// contribs writes nrows * numGroup * (numFeature+1) SHAP values.
func (m *Model) contribs(out, rows []float32, nrows int) {
	nf, ng := m.numFeature, m.numGroup
	ncol := nf + 1
	for i := range out {
		out[i] = 0
	}
	if m.booster == boosterLinear {
		// GBLinear::PredictContribution: weight*value per present feature, bias
		// column = bias + base margin.
		w := m.linW
		for r := 0; r < nrows; r++ {
			row := rows[r*nf : (r+1)*nf]
			for g := 0; g < ng; g++ {
				p := out[(r*ng+g)*ncol : (r*ng+g+1)*ncol]
				for f, x := range row {
					if x == x {
						p[f] = x * w[f*ng+g]
					}
				}
				p[nf] = w[nf*ng+g] + m.baseMargin[g]
			}
		}
		return
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	sh := &s.shap
	ps := m.shap.path
	// A row's scratch: its contributions (float64: two values each) and, where
	// keySweep runs, its keys (two per feature).
	byKeys := !m.hasCat && nf > 0
	perRow := 2 * ng * ncol
	if byKeys {
		perRow += 2 * nf
	}
	br := max(1, min(shapBlockRows, scratchBudget/perRow))
	sh.phi = growF64(sh.phi, br*ng*ncol)
	sh.cold = growU32(sh.cold, ps.maxNodes)
	var keys []uint32
	if byKeys {
		s.keys = growKeys(s.keys, br*2*nf)
		keys = s.keys
	}
	for b := 0; b < nrows; b += br {
		e := min(b+br, nrows)
		phi := sh.phi[:(e-b)*ng*ncol]
		for i := range phi {
			phi[i] = 0
		}
		if byKeys {
			for r := b; r < e; r++ {
				laneKeys(keys[(r-b)*2*nf:(r-b+1)*2*nf], rows[r*nf:(r+1)*nf])
			}
		}
		for t := range m.trees {
			tr := &m.trees[t]
			pt := &ps.trees[t]
			for r := b; r < e; r++ {
				row := rows[r*nf : (r+1)*nf]
				p := phi[((r-b)*ng+int(tr.group))*ncol:][:ncol]
				switch {
				case !pt.tabled:
					m.recursiveTreeShap(row, p, t, sh)
				case byKeys:
					cold := sh.cold[:pt.nodes]
					keySweep(pt.sweep, keys[(r-b)*2*nf:(r-b+1)*2*nf], cold)
					m.pathTreeShap(p, pt, cold)
				default:
					cold := sh.cold[:pt.nodes]
					m.coldPatterns(row, tr.root, cold)
					m.pathTreeShap(p, pt, cold)
				}
			}
		}
		for r := b; r < e; r++ {
			for g := 0; g < ng; g++ {
				o := out[(r*ng+g)*ncol : (r*ng+g+1)*ncol]
				p := phi[((r-b)*ng+g)*ncol:][:ncol]
				for c := 0; c < nf; c++ {
					o[c] = float32(p[c])
				}
				o[nf] = ps.bias[g]
			}
		}
	}
}

// pathTreeShap adds one tabled tree's contributions for a row to phi, given its cold
// patterns (keySweep, coldPatterns).
func (m *Model) pathTreeShap(phi []float64, pt *pathTree, cold []uint32) {
	ps := m.shap.path
	// Bounds checks skipped in the leaf loops hold by construction: u and u with a
	// bit cleared or flipped are below 2^n, the length of the leaf's table, and build
	// takes path features from nodes whose features flattenTree checked against
	// num_feature (< len(phi)).
	leaves := pt.scaled
	if haveShapWide && pt.wide > 0 {
		shapLeaves8(unsafe.SliceData(phi), unsafe.SliceData(leaves), pt.wide, unsafe.SliceData(cold),
			unsafe.SliceData(ps.table), unsafe.SliceData(ps.coef), unsafe.SliceData(ps.feats))
		leaves = leaves[pt.wide:]
	}
	addScaledLeaves(phi, leaves, cold, ps)
	addSmallLeaves(phi, pt.small, cold, ps)
}

// keySweep is coldPatterns for trees without categorical splits, from the row's keys
// (kernel.go; rowKeys of one lane): a node is one compare-by-carry, no branch, and
// the tree's leaves are not visited.
func keySweep(sweep []sweepNode, keys []uint32, cold []uint32) {
	cold[0] = 0
	// Bounds checks skipped below hold by construction: self and left+1 are nodes of
	// the tree (fewer than len(cold)) and key a key offset splitCarry gave (below 8*nf).
	kp, cp := unsafe.Pointer(unsafe.SliceData(keys)), unsafe.Pointer(unsafe.SliceData(cold))
	for i := range sweep {
		s := &sweep[i]
		_, right := bits.Add32(*(*uint32)(unsafe.Add(kp, s.key)), s.carry, 0)
		c := *(*uint32)(unsafe.Add(cp, uintptr(s.self)*4))
		l := unsafe.Add(cp, uintptr(s.left)*4)
		*(*uint32)(l) = c | s.bit&-right
		*(*uint32)(unsafe.Add(l, 4)) = c | s.bit&(right-1)
	}
}

// coldPatterns gives every node of the tabled tree at root, cold[k] for node root+k,
// the set of path positions (features) whose edges the row leaves on the way to it.
// Parents precede children: one forward sweep does.
func (m *Model) coldPatterns(row []float32, root uint32, cold []uint32) {
	positions := m.shap.path.bit
	cold[0] = 0
	for k := range cold {
		i := root + uint32(k)
		n := &m.nodes[i]
		if n.left == i {
			continue
		}
		var hot uint32
		if m.hasCat {
			hot = m.nextCat(row, i)
		} else {
			hot = next(m.nodes, m.flags, row, i)
		}
		// right is 1 when the row takes the right edge (it leaves the left one), 0
		// when it takes the left edge (it leaves the right one).
		right := hot - n.left
		c, b := cold[k], uint32(1)<<(positions[i]&31)
		l := n.left - root
		cold[l] = c | b&-right
		cold[l+1] = c | b&(right-1)
	}
}

// addScaledLeaves adds the shares of leaves whose tables hold H(U) to phi; cold holds
// the tree's patterns the row does not follow, per node. A function of its own, so
// that its few values stay in registers.
func addScaledLeaves(phi []float64, leaves []pathLeaf, cold []uint32, ps *pathShap) {
	tables, pp := unsafe.Pointer(unsafe.SliceData(ps.table)), unsafe.Pointer(unsafe.SliceData(phi))
	coefs, feats := unsafe.Pointer(unsafe.SliceData(ps.coef)), unsafe.Pointer(unsafe.SliceData(ps.feats))
	// Leaves with the same features follow each other: their shares are added up
	// here, then to phi once.
	var acc [maxPathFeatures]float64
	for i, lf := range leaves {
		u := (uint32(1)<<lf.n - 1) &^ cold[lf.node]
		tab := unsafe.Add(tables, uintptr(lf.tab)*4)
		coef := unsafe.Add(coefs, uintptr(lf.off)*16)
		// Whether the row follows feature j is a coin flip a branch predictor cannot
		// learn: the coefficient is picked from the pair by the bit, not by a branch.
		// The bits are shifted one place a step, not j places: a variable shift
		// takes the count register and a test for counts of 32 and more.
		rest, bit := uintptr(u), uint32(1)
		for j := range acc[:lf.n] {
			c := *(*float64)(unsafe.Add(coef, (2*uintptr(j)+rest&1)*8))
			h := *(*float32)(unsafe.Add(tab, uintptr(u&^bit)*4))
			acc[j] += c * float64(h)
			rest >>= 1
			bit <<= 1
		}
		if i+1 < len(leaves) && leaves[i+1].feat == lf.feat {
			continue
		}
		feat := unsafe.Add(feats, uintptr(lf.feat)*4)
		for j := range acc[:lf.n] {
			p := (*float64)(unsafe.Add(pp, uintptr(*(*int32)(unsafe.Add(feat, j*4)))*8))
			*p += acc[j]
			acc[j] = 0
		}
	}
}

// addSmallLeaves adds the shares of leaves whose tables hold G(U) to phi, multiplying
// Zout(U) out per row.
func addSmallLeaves(phi []float64, leaves []pathLeaf, cold []uint32, ps *pathShap) {
	tables, pp := unsafe.Pointer(unsafe.SliceData(ps.table)), unsafe.Pointer(unsafe.SliceData(phi))
	for _, lf := range leaves {
		n := lf.n
		u := (uint32(1)<<n - 1) &^ cold[lf.node]
		tab := unsafe.Add(tables, uintptr(lf.tab)*4)
		feats := ps.feats[lf.feat : lf.feat+n]
		zero := ps.zero[lf.off : lf.off+n]
		feats = feats[:len(zero)]
		// The pair holds what in + (1-in)*z is for in = 0 and 1, so the product is
		// the same to the bit (1 + 0*z is 1 but for an infinite or NaN z).
		a := lf.v // v * Zout(U)
		for j, z := range zero {
			pick := [2]float64{float64(z), 1 + 0*float64(z)}
			a *= pick[u>>j&1]
		}
		neg := a * float64(*(*float32)(unsafe.Add(tab, uintptr(u)*4)))
		for j, f := range feats {
			in := float64(u >> j & 1)
			pos := a * (1 - float64(zero[j])) * float64(*(*float32)(unsafe.Add(tab, uintptr(u^1<<j)*4)))
			p := (*float64)(unsafe.Add(pp, uintptr(f)*8))
			*p += in*(pos+neg) - neg
		}
	}
}

// recursiveTreeShap adds tree t's contributions for row to phi by exact TreeSHAP,
// for trees too large for tables. The bias column is left out: pathShap.bias has it.
func (m *Model) recursiveTreeShap(row []float32, phi []float64, t int, sh *shapScratch) {
	ncol := len(phi)
	maxd := m.shap.maxDepth + 2
	if need := maxd * (maxd + 1) / 2; len(sh.path) < need {
		sh.path = make([]pathElem, need)
	}
	if len(sh.tree) < ncol {
		sh.tree = make([]float32, ncol)
	}
	tmp := sh.tree[:ncol]
	for i := range tmp {
		tmp[i] = 0
	}
	m.treeShap(row, tmp, m.trees[t].root, 0, sh.path, 1, 1, -1)
	w := float32(1)
	if m.shap.weight != nil {
		w = m.shap.weight[t]
	}
	for c := range phi[:ncol-1] {
		phi[c] += float64(tmp[c] * w)
	}
}

func growF64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func extendPath(path []pathElem, d int, zero, one float32, feature int32) {
	path[d] = pathElem{feature: feature, zero: zero, one: one}
	if d == 0 {
		path[d].pweight = 1
	}
	fd1 := float32(d + 1)
	for i := d - 1; i >= 0; i-- {
		path[i+1].pweight += one * path[i].pweight * float32(i+1) / fd1
		path[i].pweight = zero * path[i].pweight * float32(d-i) / fd1
	}
}

func unwindPath(path []pathElem, d, pi int) {
	one, zero := path[pi].one, path[pi].zero
	nextOne := path[d].pweight
	fd1 := float32(d + 1)
	for i := d - 1; i >= 0; i-- {
		if one != 0 {
			tmp := path[i].pweight
			path[i].pweight = nextOne * fd1 / (float32(i+1) * one)
			nextOne = tmp - path[i].pweight*zero*float32(d-i)/fd1
		} else {
			path[i].pweight = (path[i].pweight * fd1) / (zero * float32(d-i))
		}
	}
	for i := pi; i < d; i++ {
		path[i].feature = path[i+1].feature
		path[i].zero = path[i+1].zero
		path[i].one = path[i+1].one
	}
}

func unwoundPathSum(path []pathElem, d, pi int) float32 {
	one, zero := path[pi].one, path[pi].zero
	nextOne := path[d].pweight
	fd1 := float32(d + 1)
	var total float32
	for i := d - 1; i >= 0; i-- {
		if one != 0 {
			tmp := nextOne * fd1 / (float32(i+1) * one)
			total += tmp
			nextOne = path[i].pweight - tmp*zero*(float32(d-i)/fd1)
		} else if zero != 0 {
			total += (path[i].pweight / zero) / (float32(d-i) / fd1)
		}
	}
	return total
}

func (m *Model) treeShap(row, phi []float32, i uint32, d int, parent []pathElem, zero, one float32, feature int32) {
	path := parent[d+1:]
	copy(path[:d+1], parent[:d+1])
	extendPath(path, d, zero, one, feature)
	if m.isLeaf(i) {
		leaf := m.shap.leaf[i]
		for k := 1; k <= d; k++ {
			w := unwoundPathSum(path, d, k)
			el := &path[k]
			phi[el.feature] += w * (el.one - el.zero) * leaf
		}
		return
	}
	n := &m.nodes[i]
	split := int32(n.feat)
	var hot uint32
	if m.hasCat {
		hot = m.nextCat(row, i)
	} else {
		hot = next(m.nodes, m.flags, row, i)
	}
	l := n.left
	cold := l
	if hot == l {
		cold = l + 1
	}
	w := m.shap.hess[i]
	hotZero := m.shap.hess[hot] / w
	coldZero := m.shap.hess[cold] / w
	inZero, inOne := float32(1), float32(1)
	pi := 0
	for ; pi <= d; pi++ {
		if path[pi].feature == split {
			break
		}
	}
	if pi != d+1 {
		inZero, inOne = path[pi].zero, path[pi].one
		unwindPath(path, d, pi)
		d--
	}
	m.treeShap(row, phi, hot, d+1, path, hotZero*inZero, inOne, split)
	m.treeShap(row, phi, cold, d+1, path, coldZero*inZero, 0, split)
}
