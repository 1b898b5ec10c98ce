package forest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// XGBoost's legacy binary model format is what Learner::SaveModel(dmlc::Stream*) writes
// (src/learner.cc): Booster.save_model("model.bst") or any name not ending in .json or
// .ubj up to 2.x, save_raw(), and KServe's own model.bst examples. It is the C structs
// of the learner, booster and trees written verbatim, little-endian, with dmlc-core's
// serializer for strings and vectors (a uint64 element count, then the elements):
//
//	["binf"]                             4 bytes, written since 1.0; optional on read
//	LearnerModelParamLegacy              136 bytes
//	objective name, booster name         string, string
//	booster body                         gbtree / dart / gblinear, below
//	attributes                           vector<pair<string, string>>, if contain_extra_attrs
//
// gbtree: GBTreeModelParam (160 bytes), num_trees x RegTree, tree_info (int32 x
// num_trees); dart adds weight_drop (vector<float>) when num_trees > 0. RegTree:
// TreeParam (148 bytes), num_nodes x Node (20 bytes), num_nodes x RTreeNodeStat (16
// bytes). gblinear: DeprecatedGBLinearModelParam (136 bytes), weights (vector<float>).
//
// The reader fills the same rawModel as the JSON reader, so both go through one build.
// Every count is checked against the bytes left before anything is allocated.

// binfMagic is the header XGBoost 1.0 and later write before the learner parameters.
const binfMagic = "binf"

// Sizes of the structs XGBoost writes verbatim; its source static_asserts each one.
const (
	learnerParamSize  = 136 // LearnerModelParamLegacy
	gbtreeParamSize   = 160 // gbm::GBTreeModelParam
	treeParamSize     = 148 // TreeParam
	treeNodeSize      = 20  // RegTree::Node: parent, cleft, cright, sindex, info
	nodeStatSize      = 16  // RTreeNodeStat: loss_chg, sum_hess, base_weight, leaf_child_cnt
	gblinearParamSize = 136 // gbm::DeprecatedGBLinearModelParam
)

// deletedNode is RegTree::Node::kDeletedNodeMarker, the sindex of a pruned node.
const deletedNode = math.MaxUint32

// legacyError reports where in a binary model reading stopped.
type legacyError struct {
	off   int
	field string
	msg   string
}

func (e *legacyError) Error() string {
	return fmt.Sprintf("binary model: offset %d: %s: %s", e.off, e.field, e.msg)
}

// binReader reads little-endian values from a byte slice without ever reading past it.
type binReader struct {
	data []byte
	off  int
}

func (r *binReader) left() int { return len(r.data) - r.off }

func (r *binReader) errAt(off int, field, format string, args ...any) error {
	return &legacyError{off: off, field: field, msg: fmt.Sprintf(format, args...)}
}

// take returns the next n bytes.
func (r *binReader) take(n int, field string) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, r.errAt(r.off, field, "truncated: need %d bytes, %d left", n, r.left())
	}
	b := r.data[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// count reads a dmlc vector or string length and checks that count elements of elemSize
// bytes fit in what is left, so a corrupt length never drives an allocation.
func (r *binReader) count(field string, elemSize int) (int, error) {
	at := r.off
	b, err := r.take(8, field+" length")
	if err != nil {
		return 0, err
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(r.left()/elemSize) {
		r.off = at
		return 0, r.errAt(at, field, "length %d needs %d bytes per element, %d bytes left", n, elemSize, r.left()-8)
	}
	return int(n), nil
}

func (r *binReader) str(field string) (string, error) {
	n, err := r.count(field, 1)
	if err != nil {
		return "", err
	}
	b, err := r.take(n, field)
	return string(b), err
}

func (r *binReader) float32s(field string) ([]float32, error) {
	n, err := r.count(field, 4)
	if err != nil {
		return nil, err
	}
	b, err := r.take(4*n, field)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = f32le(b[4*i:])
	}
	return out, nil
}

func u32le(b []byte) uint32  { return binary.LittleEndian.Uint32(b) }
func i32le(b []byte) int32   { return int32(binary.LittleEndian.Uint32(b)) }
func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// isLegacyBinary reports whether data starts with the "binf" header. Files written
// before 1.0 have none; Parse tries them as binary when they are not JSON or UBJSON.
func isLegacyBinary(data []byte) bool { return bytes.HasPrefix(data, []byte(binfMagic)) }

// parseLegacy reads a binary model and builds it like a JSON one.
func parseLegacy(data []byte) (*Model, error) {
	raw, err := readLegacy(data)
	if err != nil {
		return nil, err
	}
	return buildLegacy(raw)
}

func buildLegacy(raw *rawModel) (*Model, error) {
	m, err := build(raw)
	if err != nil {
		return nil, fmt.Errorf("binary model: %w", err)
	}
	return m, nil
}

func readLegacy(data []byte) (*rawModel, error) {
	r := &binReader{data: data}
	if isLegacyBinary(data) {
		r.off = len(binfMagic)
	}
	raw := &rawModel{sawLearner: true, sawBooster: true}

	// LearnerModelParamLegacy. Fields after minor_version were reserved (zero) in
	// older files: num_target arrived in 1.6, boost_from_average in 1.7 (a training
	// switch, ignored here).
	at := r.off
	p, err := r.take(learnerParamSize, "LearnerModelParam")
	if err != nil {
		return nil, err
	}
	baseScore := f32le(p[0:])
	raw.numFeature = int64(u32le(p[4:]))
	raw.numClass = int64(i32le(p[8:]))
	hasAttrs := i32le(p[12:]) != 0
	major, minor := u32le(p[20:]), u32le(p[24:])
	raw.numTarget = int64(u32le(p[28:]))
	if raw.numTarget == 0 {
		raw.numTarget = 1
	}
	if major > 3 {
		return nil, r.errAt(at+20, "LearnerModelParam.major_version", "expected a file written by XGBoost 0.x to 3.x, got version %d.%d", major, minor)
	}
	if major > 0 {
		raw.version = []int64{int64(major), int64(minor)}
	}
	// Before 1.0 the version fields were reserved and stay zero: such files carry no
	// version, and base_score is stored in margin space (see below).
	if math.IsNaN(float64(baseScore)) || math.IsInf(float64(baseScore), 0) {
		return nil, r.errAt(at, "LearnerModelParam.base_score", "expected a finite number, got %v", baseScore)
	}

	if raw.objective, err = r.str("objective"); err != nil {
		return nil, err
	}
	if raw.booster, err = r.str("booster"); err != nil {
		return nil, err
	}
	switch raw.booster {
	case "gbtree", "dart":
		err = readLegacyTrees(r, raw)
	case "gblinear":
		err = readLegacyLinear(r, raw)
	default:
		err = r.errAt(r.off, "booster", "unsupported booster %q (want gbtree, dart or gblinear)", truncate([]byte(raw.booster), 40))
	}
	if err != nil {
		return nil, err
	}

	if hasAttrs {
		if err := readLegacyAttributes(r, raw); err != nil {
			return nil, err
		}
	}
	// Files from before 1.0 may end with the count:poisson max_delta_step and the
	// evaluation metric names, which libxgboost 1.x skips as well. Later writers put
	// nothing after the attributes: anything left means the file was misread.
	if r.left() != 0 && major > 0 {
		return nil, r.errAt(r.off, "end of model", "%d unexpected bytes after the attributes", r.left())
	}

	raw.baseScore = strconv.FormatFloat(float64(legacyBaseScore(baseScore, major, raw.objective)), 'g', -1, 32)
	return raw, nil
}

// legacyBaseScore returns base_score in the objective's probability space, where build
// expects it. Files written before 1.0 store the margin (ProbToMargin was applied before
// saving); libxgboost 1.x maps it back with the objective's PredTransform, except for
// multi:* objectives, and so does this.
func legacyBaseScore(v float32, major uint32, objName string) float32 {
	if major >= 1 || strings.HasPrefix(objName, "multi:") {
		return v
	}
	obj, ok := objectives[objName]
	if !ok {
		return v // build rejects the objective
	}
	switch obj.transform {
	case tSigmoid:
		return sigmoid(v)
	case tExp:
		return expf(v)
	case tHinge:
		if v > 0 {
			return 1
		}
		return 0
	}
	return v
}

func readLegacyTrees(r *binReader, raw *rawModel) error {
	at := r.off
	p, err := r.take(gbtreeParamSize, "GBTreeModelParam")
	if err != nil {
		return err
	}
	numTrees := i32le(p[0:])
	raw.numParallel = int64(i32le(p[4:]))
	numPbuffer := int64(binary.LittleEndian.Uint64(p[16:]))
	leafVec := i32le(p[28:])
	raw.sawTreeModel = true
	raw.numTreesSet = true
	raw.numTrees = int64(numTrees)
	// The smallest tree is its TreeParam, one node and its statistics, plus its
	// tree_info entry.
	const minTree = treeParamSize + treeNodeSize + nodeStatSize + 4
	switch {
	case numTrees < 0 || int(numTrees) > r.left()/minTree:
		return r.errAt(at, "GBTreeModelParam.num_trees", "%d trees cannot fit in the %d bytes left", numTrees, r.left())
	case numPbuffer != 0:
		// XGBoost before 0.7 saved prediction buffers after the trees.
		return r.errAt(at+16, "GBTreeModelParam.num_pbuffer", "prediction buffers (num_pbuffer=%d, XGBoost < 0.7) are not supported", numPbuffer)
	case leafVec != 0:
		return r.errAt(at+28, "GBTreeModelParam.size_leaf_vector", "vector leaves (size_leaf_vector=%d) are not supported", leafVec)
	}
	raw.trees = make([]rawTree, numTrees)
	for i := range raw.trees {
		if err := readLegacyTree(r, &raw.trees[i], fmt.Sprintf("trees[%d]", i)); err != nil {
			return err
		}
	}
	b, err := r.take(4*int(numTrees), "tree_info")
	if err != nil {
		return err
	}
	raw.treeInfo = make([]int32, numTrees)
	for i := range raw.treeInfo {
		raw.treeInfo[i] = i32le(b[4*i:])
	}
	if raw.booster == "dart" && numTrees > 0 {
		if raw.weightDrop, err = r.float32s("weight_drop"); err != nil {
			return err
		}
	}
	return nil
}

func readLegacyTree(r *binReader, tr *rawTree, where string) error {
	at := r.off
	p, err := r.take(treeParamSize, where+".TreeParam")
	if err != nil {
		return err
	}
	numRoots := i32le(p[0:])
	numNodes := i32le(p[4:])
	numDeleted := i32le(p[8:])
	leafVec := i32le(p[20:])
	switch {
	case numNodes <= 0 || int(numNodes) > r.left()/(treeNodeSize+nodeStatSize):
		return r.errAt(at+4, where+".TreeParam.num_nodes", "%d nodes: expected 1 or more that fit in the %d bytes left", numNodes, r.left())
	case numRoots > 1:
		// Trees with several roots selected by a per-row root_index (XGBoost < 0.6).
		return r.errAt(at, where+".TreeParam.num_roots", "trees with %d roots are not supported", numRoots)
	case leafVec > 1:
		// 1 is a scalar leaf as 0 is: XGBoost 2.0 and later write 1 for every scalar tree
		// (RegTree's size_leaf_vector counts the targets) and no leaf vector data follows.
		return r.errAt(at+20, where+".TreeParam.size_leaf_vector", "vector leaves (size_leaf_vector=%d) are not supported", leafVec)
	}
	n := int(numNodes)
	tr.hasTreeParam = true
	tr.numNodesSet = true
	tr.numNodes = int64(n)
	nodesAt := r.off
	nodes, err := r.take(n*treeNodeSize, where+".nodes")
	if err != nil {
		return err
	}
	stats, err := r.take(n*nodeStatSize, where+".stats")
	if err != nil {
		return err
	}
	tr.left = make([]int32, n)
	tr.right = make([]int32, n)
	tr.splitIndex = make([]int32, n)
	tr.splitCond = make([]float32, n)
	tr.defaultLeft = make([]int32, n)
	tr.sumHess = make([]float32, n)
	deleted := 0
	for i := 0; i < n; i++ {
		nd := nodes[i*treeNodeSize:]
		// nd[0:4] is the parent (its top bit: "is a left child"); the layout is
		// checked from the children instead.
		tr.left[i] = i32le(nd[4:])
		tr.right[i] = i32le(nd[8:])
		sindex := u32le(nd[12:])
		if sindex == deletedNode && i > 0 {
			deleted++
		}
		// Node::SplitIndex and Node::DefaultLeft: the top bit of sindex is the
		// missing-value direction.
		tr.splitIndex[i] = int32(sindex & (1<<31 - 1))
		tr.defaultLeft[i] = int32(sindex >> 31)
		// A union of split_cond and leaf_value, as split_conditions in JSON.
		tr.splitCond[i] = f32le(nd[16:])
		tr.sumHess[i] = f32le(stats[i*nodeStatSize+4:])
	}
	// libxgboost refuses a tree whose deleted-node count disagrees with num_deleted.
	if int(numDeleted) != deleted {
		return r.errAt(nodesAt, where+".TreeParam.num_deleted", "says %d, the nodes mark %d deleted", numDeleted, deleted)
	}
	return nil
}

func readLegacyLinear(r *binReader, raw *rawModel) error {
	if _, err := r.take(gblinearParamSize, "GBLinearModelParam"); err != nil {
		return err
	}
	w, err := r.float32s("weights")
	if err != nil {
		return err
	}
	raw.linSeen = true
	raw.linWeights = w
	return nil
}

// readLegacyAttributes reads the booster attributes. Since 1.0 they carry the
// objective's configuration as JSON under "objective"; the rest (best_iteration,
// metrics, user attributes) does not change predictions.
func readLegacyAttributes(r *binReader, raw *rawModel) error {
	// Each pair is at least two string lengths.
	n, err := r.count("attributes", 16)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		at := r.off
		key, err := r.str(fmt.Sprintf("attributes[%d].key", i))
		if err != nil {
			return err
		}
		val, err := r.str(fmt.Sprintf("attributes[%d].value", i))
		if err != nil {
			return err
		}
		if key == "objective" {
			if err := checkObjectiveConfig(val, raw); err != nil {
				return r.errAt(at, "attributes.objective", "%v", err)
			}
		}
	}
	return nil
}

// checkObjectiveConfig checks the objective's saved configuration against the learner
// parameters, as libxgboost's ObjFunction::LoadConfig would read it: the same
// objective, and for multi:* the same number of classes.
func checkObjectiveConfig(doc string, raw *rawModel) error {
	w := &walker{r: newJSONReader([]byte(doc))}
	var name string
	numClass := int64(-1)
	err := w.object(func(key string) error {
		switch key {
		case "name":
			s, err := w.str()
			name = s
			return err
		case "softmax_multiclass_param":
			return w.object(func(k string) error {
				if k != "num_class" {
					return w.skipValue()
				}
				v, err := w.int()
				numClass = v
				return err
			})
		}
		return w.skipValue()
	})
	if err != nil {
		return err
	}
	if t, err := w.next(); err != nil {
		return err
	} else if t.kind != tokEOF {
		return fmt.Errorf("unexpected %s after the objective's JSON", t.kind)
	}
	if name != raw.objective {
		return fmt.Errorf("configures objective %q, the learner's objective is %q", truncate([]byte(name), 40), truncate([]byte(raw.objective), 40))
	}
	if numClass >= 0 && numClass != raw.numClass {
		return fmt.Errorf("softmax_multiclass_param.num_class %d, the learner's num_class is %d", numClass, raw.numClass)
	}
	return nil
}

// notAModelError explains bytes that are neither JSON/UBJSON nor a binary model; err
// is why they did not read as a binary model without header.
func notAModelError(data []byte, err error) error {
	switch {
	case len(data) >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5:
		return fmt.Errorf("this looks like a Python pickle; gangboost never loads pickles: load it in Python and save with booster.save_model('model.json')")
	case isCompressed(data):
		return fmt.Errorf("this looks like compressed data (gzip, zlib, bz2, xz or lz4; joblib.dump(..., compress=...) writes a compressed pickle); gangboost never loads pickles: load it in Python and save with booster.save_model('model.json')")
	case looksLikeText(data):
		return fmt.Errorf("not an XGBoost model: the file is text starting with %q, but neither JSON ('{') nor XGBoost's binary format (dump_model output is not a model file)", truncate(data, 20))
	}
	return fmt.Errorf("not an XGBoost model: neither JSON, UBJSON nor XGBoost's binary format (%w)", err)
}

func isCompressed(data []byte) bool {
	for _, magic := range [][]byte{
		{0x1f, 0x8b},                  // gzip
		{'Z', 'F'},                    // joblib < 0.10 zlib
		{'B', 'Z', 'h'},               // bz2
		{0xfd, '7', 'z', 'X', 'Z', 0}, // xz
		{0x04, 0x22, 0x4d, 0x18},      // lz4 frame
		{0x5d, 0x00, 0x00},            // lzma alone
	} {
		if bytes.HasPrefix(data, magic) {
			return true
		}
	}
	// zlib: CMF 0x78 (deflate, 32K window) and a header checksum divisible by 31.
	return len(data) >= 2 && data[0] == 0x78 && (uint16(data[0])<<8|uint16(data[1]))%31 == 0
}

// looksLikeText reports whether the start of data is printable text. A binary model's
// learner parameters always hold zero bytes (reserved fields).
func looksLikeText(data []byte) bool {
	head := data[:min(len(data), learnerParamSize)]
	if len(head) == 0 {
		return false
	}
	for _, c := range head {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
