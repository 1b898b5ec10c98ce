package forest

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// OutputKind selects what Predict returns per row.
type OutputKind int

const (
	// OutputDefault is what XGBoost's Booster.predict returns (KServe xgbserver's
	// output-0): transformed predictions; class index for multi:softmax.
	OutputDefault OutputKind = iota
	// OutputMargin is the untransformed margin (output_margin=True), one per group.
	OutputMargin
	// OutputProba gives class probabilities: binary models two columns [1-p, p],
	// multi-class models one per class. Not defined for regression.
	OutputProba
	// OutputLabel gives the predicted class index (binary: p > 0.5, or margin > 0
	// for logitraw/hinge); for regression and ranking, the prediction itself.
	OutputLabel
	// OutputLeaf gives the leaf index reached in every tree (pred_leaf), as float32
	// like XGBoost.
	OutputLeaf
	// OutputContribs gives SHAP contributions by exact TreeSHAP (pred_contribs):
	// NumFeatures()+1 columns per group, the last one the bias.
	OutputContribs
)

func (k OutputKind) String() string {
	switch k {
	case OutputDefault:
		return "default"
	case OutputMargin:
		return "margin"
	case OutputProba:
		return "proba"
	case OutputLabel:
		return "label"
	case OutputLeaf:
		return "leaf"
	case OutputContribs:
		return "contribs"
	}
	return fmt.Sprintf("OutputKind(%d)", int(k))
}

type boosterKind uint8

const (
	boosterTree boosterKind = iota
	boosterDart
	boosterLinear
)

// node is one tree node, packed to 16 bytes so four share a cache line. Nodes are
// renumbered at load so that a node's right child directly follows its left child,
// and leaves point to themselves with a NaN threshold: every comparison with NaN is
// false, so a walk of a fixed number of steps (the tree depth) stays on a leaf once
// it reaches one, which lets the kernels walk without a leaf test per step. What the
// hot loop does not need on every step (missing-value direction, categorical flag)
// lives in Model.flags, read only when a value is missing.
type node struct {
	split float32 // threshold: x < split goes left; NaN for leaves
	feat  uint32  // split feature index; 0 for leaves
	left  uint32  // index of the left child (right = left+1); leaves: itself
	value float32 // leaf value (times the dart weight); 0 for internal nodes
}

// Bounds on what a model may declare. A file passes the format checks with any sizes;
// these keep what one Predict call allocates, and what a row costs, proportional to a
// model someone could have trained, so a hostile or corrupt file is refused at load
// with a message instead of exhausting memory at the first request.
const (
	// maxGroups bounds num_class / num_target. Every boosting round adds one tree per
	// group, so 65536 classes is far beyond what XGBoost can train; per-call scratch
	// holds at most one row block of margins (see marginBlockRows).
	maxGroups = 1 << 16
	// maxFeatures bounds num_feature: 16M columns covers hashed sparse feature spaces
	// (2^20..2^24). A row's keys take 8 bytes per feature in the margin kernels.
	maxFeatures = 1 << 24
	// maxTrees bounds the number of trees: 10,000 rounds of 100 classes. pred_leaf
	// returns one value per tree per row.
	maxTrees = 1 << 20
	// maxTreeNodes bounds the nodes of one tree, more than a full tree of depth 23;
	// flattening a tree allocates a few words per node.
	maxTreeNodes = 1 << 24
	// maxContribsWidth bounds (num_feature+1)*groups, the values one row's SHAP output
	// and its scratch take (256 MiB as float32 here): enough for one group of
	// maxFeatures, or 1000 features of 32k classes. Larger models load, but have no
	// contributions.
	maxContribsWidth = 1 << 26
	// maxShapDepth bounds the tree depth for which contributions are computed: exact
	// TreeSHAP keeps a path of O(depth^2) entries and costs O(leaves*depth^2) per tree
	// and row. XGBoost's default max_depth is 6; lossguide trees of a few hundred
	// leaves stay well below.
	maxShapDepth = 256
)

// Model.flags bits per node.
const (
	flagMissRight = 1 // a missing value goes to the right child
	flagCat       = 2 // categorical split: categories in the node's set go right
)

type treeMeta struct {
	root  uint32
	depth int32 // longest root-to-leaf path, in edges
	group int32
}

// Model is a loaded XGBoost model. It is immutable and safe for concurrent use.
type Model struct {
	objName      string
	obj          objective
	booster      boosterKind
	numFeature   int
	numGroup     int
	featureNames []string
	featureTypes []string
	baseMargin   []float32 // per group, in margin space
	version      []int64

	// Tree ensembles.
	nodes   []node
	flags   []uint8   // per node: flagMissRight, flagCat; 0 for leaves
	fast    fastTrees // nodes for the margin kernels (kernel.go); empty with categorical splits
	wide    wideTrees // trees for the AVX-512 batch kernel (kernel_wide.go); empty where it cannot run
	row     rowTrees  // trees for the single-row kernel (kernel_row.go); empty where it does not fit
	lanes   int       // rows whose keys interleave in the margin kernels (kernel.go)
	trees   []treeMeta
	nodeID  []int32  // XGBoost node id per flat node (pred_leaf output)
	catSet  []int32  // per flat node: offset into catVals of its set, for flagCat nodes
	catVals []uint32 // category sets, see setCat
	hasCat  bool
	shap    *shapData // TreeSHAP statistics; nil when contributions are unavailable
	shapErr string    // why shap is nil
	// shapChunk is how many rows of contributions take about a millisecond.
	shapChunk int

	// leafTrees, for models with vector-leaf trees, is the first of the scalar trees
	// each original tree was split into (see splitVectorLeaves); pred_leaf reports
	// those. nil otherwise: every tree is reported.
	leafTrees []int32

	// sortRows: each row's default outputs are sorted ascending (reg:quantileerror
	// with several quantiles, saved by XGBoost 3.4 or later).
	sortRows bool

	// gblinear: weights[f*numGroup+g], bias at weights[numFeature*numGroup+g].
	linW []float32
}

// NumFeatures is the number of input columns the model expects.
func (m *Model) NumFeatures() int { return m.numFeature }

// NumGroups is the number of output groups: num_class for multi:* objectives, the
// number of targets for multi-output regression, else 1.
func (m *Model) NumGroups() int { return m.numGroup }

// Objective is the objective name, e.g. "binary:logistic".
func (m *Model) Objective() string { return m.objName }

// Booster is "gbtree", "dart" or "gblinear".
func (m *Model) Booster() string {
	switch m.booster {
	case boosterDart:
		return "dart"
	case boosterLinear:
		return "gblinear"
	}
	return "gbtree"
}

// FeatureNames returns the feature names saved with the model; nil if none.
func (m *Model) FeatureNames() []string { return m.featureNames }

// FeatureTypes returns the feature types saved with the model ("float", "int", "c",
// ...); nil if none.
func (m *Model) FeatureTypes() []string { return m.featureTypes }

// NumTrees is the number of trees (0 for gblinear).
func (m *Model) NumTrees() int {
	if m.leafTrees != nil {
		return len(m.leafTrees)
	}
	return len(m.trees)
}

// IsClassifier reports whether the objective predicts classes (binary:*, multi:*).
func (m *Model) IsClassifier() bool {
	return m.obj.kind == kindBinary || m.obj.kind == kindMulti
}

// Width is the number of values Predict returns per row for kind, or an error when the
// model cannot produce that output.
func (m *Model) Width(kind OutputKind) (int, error) {
	switch kind {
	case OutputDefault:
		if m.obj.transform == tArgmax {
			return 1, nil
		}
		return m.numGroup, nil
	case OutputMargin:
		return m.numGroup, nil
	case OutputProba:
		switch m.obj.kind {
		case kindBinary:
			return 2 * m.numGroup, nil
		case kindMulti:
			return m.numGroup, nil
		}
		return 0, fmt.Errorf("output %s: objective %s is not a classifier", kind, m.objName)
	case OutputLabel:
		if m.obj.kind == kindMulti {
			return 1, nil
		}
		return m.numGroup, nil
	case OutputLeaf:
		if m.booster == boosterLinear {
			return 0, fmt.Errorf("output %s: gblinear models have no trees", kind)
		}
		return m.NumTrees(), nil
	case OutputContribs:
		if w := m.contribsWidth(); w > maxContribsWidth {
			return 0, fmt.Errorf("output %s: (num_feature+1)*groups = %d values per row, contributions support up to %d", kind, w, maxContribsWidth)
		}
		if m.booster != boosterLinear && m.shap == nil {
			return 0, fmt.Errorf("output %s: %s", kind, m.shapErr)
		}
		return m.contribsWidth(), nil
	}
	return 0, fmt.Errorf("unknown output kind %d", int(kind))
}

func (m *Model) contribsWidth() int { return (m.numFeature + 1) * m.numGroup }

// build validates the raw document and flattens it into a Model.
func build(raw *rawModel) (*Model, error) {
	if !raw.sawLearner {
		return nil, fmt.Errorf("not an XGBoost model: no \"learner\" object (dump_model output and pickles are not model files)")
	}
	if !raw.sawBooster {
		return nil, fmt.Errorf("learner.gradient_booster missing")
	}
	if raw.objective == "" {
		return nil, fmt.Errorf("learner.objective.name missing")
	}
	obj, ok := objectives[raw.objective]
	if !ok {
		return nil, fmt.Errorf("learner.objective.name: unsupported objective %q", raw.objective)
	}
	if raw.objective == "binary:logitraw" && versionBefore(raw.version, 1, 4) {
		obj.margin = mLogit
	}
	m := &Model{objName: raw.objective, obj: obj, version: raw.version}
	if raw.numFeature <= 0 || raw.numFeature > maxFeatures {
		return nil, fmt.Errorf("learner.learner_model_param.num_feature: expected 1..%d, got %d", maxFeatures, raw.numFeature)
	}
	m.numFeature = int(raw.numFeature)
	m.numGroup = 1
	for _, p := range []struct {
		name string
		v    int64
	}{{"num_class", raw.numClass}, {"num_target", raw.numTarget}} {
		if p.v < 0 || p.v > maxGroups {
			return nil, fmt.Errorf("learner.learner_model_param.%s: expected 0..%d, got %d", p.name, maxGroups, p.v)
		}
	}
	if raw.numClass > 1 {
		m.numGroup = int(raw.numClass)
	} else if raw.numTarget > 1 {
		m.numGroup = int(raw.numTarget)
	}
	if obj.kind == kindMulti && raw.numClass < 1 {
		return nil, fmt.Errorf("learner.learner_model_param.num_class: objective %s needs num_class >= 1, got %d", raw.objective, raw.numClass)
	}
	if len(raw.featureNames) > 0 && len(raw.featureNames) != m.numFeature {
		return nil, fmt.Errorf("learner.feature_names: %d names for %d features", len(raw.featureNames), m.numFeature)
	}
	if len(raw.featureTypes) > 0 && len(raw.featureTypes) != m.numFeature {
		return nil, fmt.Errorf("learner.feature_types: %d types for %d features", len(raw.featureTypes), m.numFeature)
	}
	m.featureNames = raw.featureNames
	m.featureTypes = raw.featureTypes
	if len(m.featureNames) == 0 {
		m.featureNames = nil
	}
	if len(m.featureTypes) == 0 {
		m.featureTypes = nil
	}

	base, err := parseBaseScore(raw.baseScore, m.numGroup)
	if err != nil {
		return nil, fmt.Errorf("learner.learner_model_param.base_score: %w", err)
	}
	m.baseMargin = make([]float32, m.numGroup)
	for g := range m.baseMargin {
		v, err := obj.probToMargin(raw.objective, base[g])
		if err != nil {
			return nil, fmt.Errorf("learner.learner_model_param.base_score: %w", err)
		}
		m.baseMargin[g] = v
	}

	if raw.catsValues > 0 {
		return nil, fmt.Errorf("learner.gradient_booster.model.cats: the model saves category names (%d values), which are not supported: the evaluator reads category codes; train on codes (integer-coded columns) instead of named categories", raw.catsValues)
	}
	switch raw.booster {
	case "gbtree", "dart":
		m.booster = boosterTree
		if raw.booster == "dart" || raw.dartInModel {
			// XGBoost 3.3 and later save dart as "gbtree" with weight_drop in
			// the model; the weights apply all the same.
			m.booster = boosterDart
		}
		if err := m.buildTrees(raw); err != nil {
			return nil, err
		}
	case "gblinear":
		m.booster = boosterLinear
		want := (m.numFeature + 1) * m.numGroup
		if len(raw.linWeights) != want {
			return nil, fmt.Errorf("learner.gradient_booster.model.weights: expected (num_feature+1)*groups = %d weights, got %d", want, len(raw.linWeights))
		}
		m.linW = raw.linWeights
		if err := m.linearBaseMargin(raw, base); err != nil {
			return nil, err
		}
	case "":
		return nil, fmt.Errorf("learner.gradient_booster.name missing")
	default:
		return nil, fmt.Errorf("learner.gradient_booster.name: unsupported booster %q (want gbtree, dart or gblinear)", raw.booster)
	}
	// XGBoost 3.4 sorts each row's quantile predictions so they never cross (the
	// margins stay as they are).
	m.sortRows = raw.objective == "reg:quantileerror" && m.numGroup > 1 && !versionBefore(raw.version, 3, 4)
	m.shapChunk = m.contribsChunk()
	return m, nil
}

// linearBaseMargin sets the intercepts of a multi-output gblinear model. XGBoost 3.4's
// GBLinear adds base_score[0] to every output, whatever the other values; 3.1 to 3.3
// wrote one value per output, and how they entered a linear model is not pinned down
// here, so such files are refused unless all values are equal.
func (m *Model) linearBaseMargin(raw *rawModel, base []float32) error {
	if m.numGroup < 2 || !strings.HasPrefix(strings.TrimSpace(raw.baseScore), "[") {
		return nil
	}
	switch {
	case !versionBefore(raw.version, 3, 4):
		for g := range m.baseMargin {
			m.baseMargin[g] = m.baseMargin[0]
		}
	case !slices.ContainsFunc(base, func(v float32) bool { return v != base[0] }):
	default:
		return fmt.Errorf("learner.learner_model_param.base_score: a gblinear model with one intercept per output (%d values) saved by XGBoost %s is not supported; save it with XGBoost 3.4 or later", len(base), versionString(raw.version))
	}
	return nil
}

func versionString(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ".")
}

// versionBefore reports whether the model's "version" field is older than major.minor;
// files without one count as new.
func versionBefore(v []int64, major, minor int64) bool {
	if len(v) < 2 {
		return false
	}
	return v[0] < major || v[0] == major && v[1] < minor
}

// parseBaseScore reads base_score, one value or one per group ("[a,b,...]").
func parseBaseScore(s string, groups int) ([]float32, error) {
	out := make([]float32, groups)
	if s == "" {
		// Absent in models older than 1.0's JSON format: XGBoost's default.
		for i := range out {
			out[i] = 0.5
		}
		return out, nil
	}
	t := strings.TrimSpace(s)
	var parts []string
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		parts = strings.Split(t[1:len(t)-1], ",")
	} else {
		parts = []string{t}
	}
	vals := make([]float32, 0, len(parts))
	for _, p := range parts {
		v, err := parseFloat32String([]byte(strings.TrimSpace(p)))
		if err != nil {
			return nil, fmt.Errorf("expected a number or [numbers], got %q", truncate([]byte(s), 40))
		}
		vals = append(vals, v)
	}
	switch len(vals) {
	case 1:
		for i := range out {
			out[i] = vals[0]
		}
	case groups:
		copy(out, vals)
	default:
		return nil, fmt.Errorf("expected 1 value or one per output group (%d), got %d values", groups, len(vals))
	}
	return out, nil
}

func (m *Model) buildTrees(raw *rawModel) error {
	const where = "learner.gradient_booster.model"
	if !raw.sawTreeModel {
		return fmt.Errorf("%s: no trees (gbtree_model_param, tree_info, trees missing)", where)
	}
	nt := len(raw.trees)
	if raw.numTreesSet && (raw.numTrees < 0 || raw.numTrees > maxTrees) {
		return fmt.Errorf("%s.gbtree_model_param.num_trees: expected 0..%d, got %d", where, maxTrees, raw.numTrees)
	}
	if nt > maxTrees {
		return fmt.Errorf("%s.trees: expected at most %d trees, got %d", where, maxTrees, nt)
	}
	if raw.numTreesSet && raw.numTrees != int64(nt) {
		return fmt.Errorf("%s.gbtree_model_param.num_trees: says %d, file has %d trees", where, raw.numTrees, nt)
	}
	if len(raw.treeInfo) != nt {
		return fmt.Errorf("%s.tree_info: %d entries for %d trees", where, len(raw.treeInfo), nt)
	}
	if m.booster == boosterDart && len(raw.weightDrop) != nt {
		return fmt.Errorf("learner.gradient_booster.weight_drop: %d weights for %d trees", len(raw.weightDrop), nt)
	}
	if err := m.splitVectorLeaves(raw); err != nil {
		return err
	}
	nt = len(raw.trees)
	var weights []float32
	if m.booster == boosterDart {
		weights = raw.weightDrop
	}
	total := 0
	for i := range raw.trees {
		total += len(raw.trees[i].left)
	}
	// Flat node indices are 32-bit, and kept small enough that byte offsets of
	// 16-byte nodes are too.
	if maxNodes := math.MaxUint32 / 16; total >= maxNodes {
		return fmt.Errorf("%s.trees: %d nodes in total, at most %d supported", where, total, maxNodes-1)
	}
	m.nodes = make([]node, 0, total)
	m.flags = make([]uint8, 0, total)
	m.nodeID = make([]int32, 0, total)
	m.trees = make([]treeMeta, nt)
	hasHess := true
	for i := range raw.trees {
		tr := &raw.trees[i]
		g := raw.treeInfo[i]
		if g < 0 || int(g) >= m.numGroup {
			return fmt.Errorf("%s.tree_info[%d]: group %d out of range [0, %d)", where, i, g, m.numGroup)
		}
		w := float32(1)
		if weights != nil {
			w = weights[i]
		}
		meta, err := m.flattenTree(tr, w)
		if err != nil {
			return fmt.Errorf("%s.trees[%d]: %w", where, i, err)
		}
		meta.group = g
		m.trees[i] = meta
		if len(tr.sumHess) != len(tr.left) {
			hasHess = false
		}
	}
	maxDepth := int32(0)
	for _, tr := range m.trees {
		maxDepth = max(maxDepth, tr.depth)
	}
	switch {
	case !hasHess:
		m.shapErr = "the model file has no sum_hessian statistics"
	case maxDepth > maxShapDepth:
		m.shapErr = fmt.Sprintf("a tree is %d levels deep, contributions support up to %d", maxDepth, maxShapDepth)
	case m.contribsWidth() > maxContribsWidth:
		m.shapErr = fmt.Sprintf("(num_feature+1)*groups = %d values per row, contributions support up to %d", m.contribsWidth(), maxContribsWidth)
	default:
		m.shap = newShapData(m, raw, weights)
		m.shap.path = newPathShap(m)
	}
	if !m.hasCat {
		m.buildFast()
	}
	return nil
}

// splitVectorLeaves turns each vector-leaf tree (multi_strategy=multi_output_tree: one
// tree whose leaves hold one value per target) into one scalar tree per target, with
// the same splits and the leaf values of that target. Each target's margin then sums
// the same values in the same tree order as XGBoost's, so margins stay exact; pred_leaf
// reports one column per original tree (leafTrees). raw's trees, tree_info and
// weight_drop are replaced by the split ones.
func (m *Model) splitVectorLeaves(raw *rawModel) error {
	const where = "learner.gradient_booster.model.trees"
	vec, first := 0, -1
	for i := range raw.trees {
		if raw.trees[i].multiTarget || raw.trees[i].leafVecSize > 1 {
			vec++
			if first < 0 {
				first = i
			}
		}
	}
	if vec == 0 {
		return nil
	}
	k, n := m.numGroup, len(raw.trees)
	lv := raw.trees[first].leafVecSize
	switch {
	case vec != n:
		return fmt.Errorf("%s[%d]: multi-target trees (size_leaf_vector=%d) are not supported mixed with scalar trees (%d of %d trees have vector leaves)", where, first, lv, vec, n)
	case lv != int64(k) || k < 2:
		return fmt.Errorf("%s[%d]: multi-target trees (size_leaf_vector=%d) are not supported in a model of %d targets", where, first, lv, k)
	case int64(n)*int64(k) > maxTrees:
		return fmt.Errorf("%s: %d vector-leaf trees of %d targets make %d trees, at most %d supported", where, n, k, int64(n)*int64(k), maxTrees)
	}
	trees := make([]rawTree, 0, n*k)
	info := make([]int32, 0, n*k)
	var drop []float32
	if raw.weightDrop != nil {
		drop = make([]float32, 0, n*k)
	}
	m.leafTrees = make([]int32, n)
	for i := range raw.trees {
		tr := &raw.trees[i]
		if tr.leafVecSize != int64(k) {
			return fmt.Errorf("%s[%d]: multi-target trees (size_leaf_vector=%d) are not supported in a model of %d targets", where, i, tr.leafVecSize, k)
		}
		if raw.treeInfo[i] != 0 {
			return fmt.Errorf("%s: tree_info[%d] is %d, vector-leaf trees belong to group 0", where, i, raw.treeInfo[i])
		}
		nn := len(tr.left)
		if len(tr.right) != nn || len(tr.splitCond) != nn {
			return fmt.Errorf("%s[%d]: right_children/split_conditions have %d/%d entries for %d nodes", where, i, len(tr.right), len(tr.splitCond), nn)
		}
		// base_weights (k per node, in both layouts) also bounds the split trees'
		// size by the values the file holds.
		if len(tr.baseWeights) != nn*k {
			return fmt.Errorf("%s[%d].base_weights: %d values for %d nodes of %d targets", where, i, len(tr.baseWeights), nn, k)
		}
		// Leaf values: 3.x keeps them in leaf_weights, k per leaf, with the leaf's
		// index in leaf_weights stored as its right child; 2.x has right child -1
		// and the values in base_weights.
		leafVal := func(id, c int) float32 { return tr.baseWeights[id*k+c] }
		right := tr.right
		if tr.multiTarget {
			if len(tr.leafWeights)%k != 0 {
				return fmt.Errorf("%s[%d].leaf_weights: %d values, not a multiple of %d targets", where, i, len(tr.leafWeights), k)
			}
			// Each leaf has its own entry, as XGBoost writes them.
			nl := len(tr.leafWeights) / k
			seen := make([]bool, nl)
			right = slices.Clone(tr.right)
			for id := 0; id < nn; id++ {
				if tr.left[id] != -1 {
					continue
				}
				l := right[id]
				if l < 0 || int(l) >= nl || seen[l] {
					return fmt.Errorf("%s[%d]: leaf %d refers to leaf_weights entry %d of %d (out of range or shared)", where, i, id, l, nl)
				}
				seen[l] = true
				right[id] = -1
			}
			leafVal = func(id, c int) float32 { return tr.leafWeights[int(tr.right[id])*k+c] }
		}
		m.leafTrees[i] = int32(len(trees))
		for c := 0; c < k; c++ {
			t := *tr
			t.multiTarget, t.leafVecSize, t.baseWeights, t.leafWeights = false, 0, nil, nil
			t.right = right
			t.splitCond = slices.Clone(tr.splitCond)
			for id := 0; id < nn; id++ {
				if tr.left[id] == -1 {
					t.splitCond[id] = leafVal(id, c)
				}
			}
			trees = append(trees, t)
			info = append(info, int32(c))
			if drop != nil {
				drop = append(drop, raw.weightDrop[i])
			}
		}
	}
	raw.trees, raw.treeInfo, raw.weightDrop = trees, info, drop
	return nil
}

// flattenTree appends the nodes reachable from the root in breadth-first order with
// each right child right after its left sibling.
func (m *Model) flattenTree(tr *rawTree, weight float32) (treeMeta, error) {
	if tr.multiTarget || tr.leafVecSize > 1 { // split by splitVectorLeaves before
		return treeMeta{}, fmt.Errorf("multi-target trees (size_leaf_vector=%d) are not supported: vector leaves (multi_strategy=multi_output_tree) cannot be evaluated; train with multi_strategy=one_output_per_tree", tr.leafVecSize)
	}
	n := len(tr.left)
	if n == 0 {
		return treeMeta{}, fmt.Errorf("left_children: empty tree")
	}
	if tr.numNodesSet && (tr.numNodes < 0 || tr.numNodes > maxTreeNodes) {
		return treeMeta{}, fmt.Errorf("tree_param.num_nodes: expected 1..%d, got %d", maxTreeNodes, tr.numNodes)
	}
	if n > maxTreeNodes {
		return treeMeta{}, fmt.Errorf("left_children: expected at most %d nodes, got %d", maxTreeNodes, n)
	}
	if tr.numNodesSet && tr.numNodes != int64(n) {
		return treeMeta{}, fmt.Errorf("tree_param.num_nodes: says %d, left_children has %d", tr.numNodes, n)
	}
	check := func(name string, l int) error {
		if l != n {
			return fmt.Errorf("%s: %d entries for %d nodes", name, l, n)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		l    int
	}{
		{"right_children", len(tr.right)},
		{"split_indices", len(tr.splitIndex)},
		{"split_conditions", len(tr.splitCond)},
		{"default_left", len(tr.defaultLeft)},
	} {
		if err := check(c.name, c.l); err != nil {
			return treeMeta{}, err
		}
	}
	if len(tr.splitType) != 0 {
		if err := check("split_type", len(tr.splitType)); err != nil {
			return treeMeta{}, err
		}
	}
	cats, err := m.readCategories(tr, n)
	if err != nil {
		return treeMeta{}, err
	}

	base := uint32(len(m.nodes))
	// order[k] is the original id of flat node base+k.
	flat := make([]int32, n) // original id -> flat offset+1 (0 = not reached)
	order := make([]int32, 1, n)
	order[0] = 0
	flat[0] = 1
	depthOf := make([]int32, 1, n)
	maxDepth := int32(0)
	for k := 0; k < len(order); k++ {
		id := order[k]
		l, r := tr.left[id], tr.right[id]
		if l == -1 {
			if r != -1 {
				return treeMeta{}, fmt.Errorf("node %d: left child -1 but right child %d", id, r)
			}
			continue
		}
		for _, c := range [2]int32{l, r} {
			if c < 0 || int(c) >= n {
				return treeMeta{}, fmt.Errorf("node %d: child %d out of range [0, %d)", id, c, n)
			}
			if flat[c] != 0 {
				return treeMeta{}, fmt.Errorf("node %d: child %d is reached twice (cycle or shared node)", id, c)
			}
			flat[c] = int32(len(order)) + 1
			order = append(order, c)
			d := depthOf[k] + 1
			depthOf = append(depthOf, d)
			if d > maxDepth {
				maxDepth = d
			}
		}
	}
	for k, id := range order {
		var nd node
		var fl uint8
		if tr.left[id] == -1 {
			nd = node{split: float32(math.NaN()), left: base + uint32(k), value: tr.splitCond[id] * weight}
		} else {
			f := tr.splitIndex[id]
			if f < 0 || int(f) >= m.numFeature {
				return treeMeta{}, fmt.Errorf("node %d: split_indices %d out of range [0, %d) (num_feature)", id, f, m.numFeature)
			}
			nd = node{split: tr.splitCond[id], feat: uint32(f), left: base + uint32(flat[tr.left[id]]) - 1}
			if tr.defaultLeft[id] == 0 {
				fl |= flagMissRight
			}
			if len(tr.splitType) != 0 && tr.splitType[id] != 0 {
				if tr.splitType[id] != 1 {
					return treeMeta{}, fmt.Errorf("node %d: split_type %d unknown (0 numerical, 1 categorical)", id, tr.splitType[id])
				}
				set, ok := cats[id]
				if !ok {
					return treeMeta{}, fmt.Errorf("node %d: categorical split without categories", id)
				}
				fl |= flagCat
				nd.split = float32(math.NaN())
				m.setCat(int(base)+k, set)
			}
			if flat[tr.right[id]] != flat[tr.left[id]]+1 {
				// Cannot happen with breadth-first numbering; keep the invariant the
				// kernels rely on explicit.
				return treeMeta{}, fmt.Errorf("node %d: internal error: children not adjacent", id)
			}
		}
		_ = k
		m.nodes = append(m.nodes, nd)
		m.flags = append(m.flags, fl)
		m.nodeID = append(m.nodeID, id)
	}
	return treeMeta{root: base, depth: maxDepth}, nil
}

// readCategories returns the sorted category set of each categorical node. Sets are
// kept as sorted lists rather than bit sets: a hostile file listing category 2^24-1 in
// many nodes would otherwise cost megabytes per node.
func (m *Model) readCategories(tr *rawTree, n int) (map[int32][]uint32, error) {
	if len(tr.catNodes) == 0 {
		return nil, nil
	}
	if len(tr.catSegments) != len(tr.catNodes) || len(tr.catSizes) != len(tr.catNodes) {
		return nil, fmt.Errorf("categories_nodes/segments/sizes: lengths %d/%d/%d differ",
			len(tr.catNodes), len(tr.catSegments), len(tr.catSizes))
	}
	out := make(map[int32][]uint32, len(tr.catNodes))
	for i, nid := range tr.catNodes {
		if nid < 0 || nid >= int64(n) {
			return nil, fmt.Errorf("categories_nodes[%d]: node %d out of range [0, %d)", i, nid, n)
		}
		beg, size := tr.catSegments[i], tr.catSizes[i]
		if beg < 0 || size < 0 || beg > int64(len(tr.categories)) || size > int64(len(tr.categories))-beg {
			return nil, fmt.Errorf("categories_segments[%d]: [%d, %d+%d) outside categories (%d)", i, beg, beg, size, len(tr.categories))
		}
		set := make([]uint32, 0, size)
		for _, c := range tr.categories[beg : beg+size] {
			if c < 0 || c >= 1<<24 {
				return nil, fmt.Errorf("categories: category %d of node %d out of range [0, 2^24)", c, nid)
			}
			set = append(set, uint32(c))
		}
		slices.Sort(set)
		out[int32(nid)] = slices.Compact(set)
	}
	return out, nil
}

// setCat records the category set of flat node i, stored as [n, c0, c1, ...] in catVals.
func (m *Model) setCat(i int, set []uint32) {
	for len(m.catSet) <= i {
		m.catSet = append(m.catSet, -1)
	}
	m.catSet[i] = int32(len(m.catVals))
	m.catVals = append(m.catVals, uint32(len(set)))
	m.catVals = append(m.catVals, set...)
	m.hasCat = true
}

// catGoesRight follows XGBoost's common::Decision: a category in the node's set goes
// right; anything else goes left, including negative values and values >= 2^24, which
// XGBoost calls invalid. Fractional values are truncated toward zero, as XGBoost's cast.
func (m *Model) catGoesRight(i uint32, v float32) bool {
	if v < 0 || v >= 16777216 {
		return false
	}
	c := uint32(v)
	off := m.catSet[i]
	set := m.catVals[off+1 : off+1+int32(m.catVals[off])]
	_, found := slices.BinarySearch(set, c)
	return found
}
