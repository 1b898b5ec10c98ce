package forest

// Exact TreeSHAP (Lundberg et al. 2018, Algorithm 2) as XGBoost implements it for
// pred_contribs (RegTree::CalculateContributions). Every operation is float32 in the
// same order as XGBoost's, so contributions agree to float rounding.

type shapData struct {
	hess     []float32 // sum_hessian per flat node
	mean     []float32 // expected leaf value below each flat node (FillNodeMeanValues)
	leaf     []float32 // leaf value per flat node, without the dart weight
	weight   []float32 // per tree; nil means 1
	maxDepth int
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
	sh := &s.shap
	maxd := m.shap.maxDepth + 2
	if need := maxd * (maxd + 1) / 2; len(sh.path) < need {
		sh.path = make([]pathElem, need)
	}
	if len(sh.tree) < ncol {
		sh.tree = make([]float32, ncol)
	}
	tmp := sh.tree[:ncol]
	for r := 0; r < nrows; r++ {
		row := rows[r*nf : (r+1)*nf]
		for g := 0; g < ng; g++ {
			p := out[(r*ng+g)*ncol : (r*ng+g+1)*ncol]
			for t := range m.trees {
				if int(m.trees[t].group) != g {
					continue
				}
				for i := range tmp {
					tmp[i] = 0
				}
				root := m.trees[t].root
				tmp[nf] += m.shap.mean[root]
				m.treeShap(row, tmp, root, 0, sh.path, 1, 1, -1)
				w := float32(1)
				if m.shap.weight != nil {
					w = m.shap.weight[t]
				}
				for c := range p {
					p[c] += tmp[c] * w
				}
			}
			p[nf] += m.baseMargin[g]
		}
	}
	scratchPool.Put(s)
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
