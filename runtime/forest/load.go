package forest

import (
	"fmt"
	"os"
	"strings"
)

// rawTree holds one tree as XGBoost stores it (RegTree::SaveModel): parallel arrays
// indexed by node id. Pruned trees keep deleted nodes in these arrays; only nodes
// reachable from the root are evaluated.
type rawTree struct {
	left, right []int32
	splitIndex  []int32
	splitCond   []float32
	defaultLeft []int32
	splitType   []int32
	sumHess     []float32
	categories  []int64
	catNodes    []int64
	catSegments []int64
	catSizes    []int64
	numNodes    int64
	numNodesSet bool
	leafVecSize int64
	multiTarget bool // 3.x vector-leaf tree layout
	// baseWeights holds each node's weight, size_leaf_vector values per node in
	// vector-leaf trees, whose leaf values are the leaves' base weights.
	baseWeights  []float32
	leafWeights  []float32 // 3.x vector-leaf trees: the leaves' values, in node order
	hasTreeParam bool
}

// rawModel is everything the loader keeps from the document, before validation.
type rawModel struct {
	version      []int64
	featureNames []string
	featureTypes []string
	booster      string // gbtree, dart, gblinear
	trees        []rawTree
	treeInfo     []int32
	numParallel  int64
	numTreesSet  bool
	numTrees     int64
	weightDrop   []float32
	// dartInModel: weight_drop sits inside the gbtree model, as XGBoost 3.3 and later
	// save a dart booster (name "gbtree"); before, dart wrapped a gbtree object.
	dartInModel bool
	// catsValues counts the values in 3.x's gbtree "cats" (category names saved
	// with the model); empty when the model was trained on category codes.
	catsValues   int
	linWeights   []float32
	linSeen      bool
	baseScore    string
	numClass     int64
	numFeature   int64
	numTarget    int64
	objective    string
	sawLearner   bool
	sawBooster   bool
	sawTreeModel bool
}

// Load reads an XGBoost model file: JSON, UBJSON or the legacy binary format, told
// apart by content as Parse does (never by the file name: a model.bin may hold any of
// them). Errors name the file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

// Parse reads a model from memory, choosing the reader by content as libxgboost's
// LearnerImpl::LoadModel does:
//   - "binf": XGBoost's binary format as 1.0 and later write it (legacy.go);
//   - '{' then a UBJSON length marker ('L', 'l', ...): UBJSON;
//   - '{' or '[' after optional whitespace, or nothing: JSON;
//   - anything else: the binary format without header, as written before 1.0. When
//     that fails too, the error says what the bytes look like (a pickle, compressed
//     data, text).
func Parse(data []byte) (*Model, error) {
	switch {
	case isLegacyBinary(data):
		return parseLegacy(data)
	case isUBJ(data):
		return parseWith(newUBJReader(data))
	case looksLikeJSON(data):
		return parseWith(newJSONReader(data))
	}
	raw, err := readLegacy(data)
	if err != nil {
		return nil, notAModelError(data, err)
	}
	return buildLegacy(raw)
}

// looksLikeJSON reports whether the first byte after JSON whitespace opens an object or
// an array (dump_model output, refused later with a message), or there is none.
func looksLikeJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return true
}

func isUBJ(data []byte) bool {
	if len(data) < 2 || data[0] != '{' {
		return false
	}
	switch data[1] {
	case 'i', 'U', 'I', 'l', 'L', '#', '$', 'N':
		return true
	}
	return false
}

func parseWith(r tokenReader) (*Model, error) {
	w := &walker{r: r}
	var raw rawModel
	if err := w.object(func(key string) error {
		switch key {
		case "learner":
			raw.sawLearner = true
			return readLearner(w, &raw)
		case "version":
			v, err := w.int64s()
			raw.version = v
			return err
		}
		return w.unknown()
	}); err != nil {
		return nil, err
	}
	if t, err := w.next(); err != nil {
		return nil, err
	} else if t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %s after the model document", t.kind)
	}
	return build(&raw)
}

func readLearner(w *walker, raw *rawModel) error {
	return w.object(func(key string) error {
		var err error
		switch key {
		case "feature_names":
			raw.featureNames, err = w.strs()
		case "feature_types":
			raw.featureTypes, err = w.strs()
		case "gradient_booster":
			raw.sawBooster = true
			err = readBooster(w, raw)
		case "learner_model_param":
			err = readLearnerParam(w, raw)
		case "objective":
			err = w.object(func(k string) error {
				if k == "name" {
					s, err := w.str()
					raw.objective = s
					return err
				}
				// The objective's training parameters (reg_loss_param, ...).
				return w.skipValue()
			})
		case "attributes":
			// User attributes and best_iteration/best_score, which
			// Booster.predict does not apply.
			err = w.skipValue()
		default:
			err = w.unknown()
		}
		return err
	})
}

func readLearnerParam(w *walker, raw *rawModel) error {
	return w.object(func(key string) error {
		t, err := w.next()
		if err != nil {
			return err
		}
		if key == "base_score" {
			// 1.x/2.x: "5E-1"; 3.x: "[5E-1]" or "[1E0,2E0]" for one intercept per
			// target. Some writers use a bare number or an array.
			switch t.kind {
			case tokString:
				raw.baseScore = string(t.text)
			case tokNumber:
				v, err := t.float32()
				if err != nil {
					return err
				}
				raw.baseScore = fmt.Sprint(v)
			case tokArrStart:
				var parts []string
				for {
					e, err := w.next()
					if err != nil {
						return err
					}
					if e.kind == tokArrEnd {
						break
					}
					v, err := e.float32()
					if err != nil {
						return err
					}
					parts = append(parts, fmt.Sprint(v))
				}
				raw.baseScore = "[" + strings.Join(parts, ",") + "]"
			default:
				if err := w.skip(t); err != nil {
					return err
				}
				return fmt.Errorf("expected a number, got %s", t.kind)
			}
			return nil
		}
		var dst *int64
		switch key {
		case "num_class":
			dst = &raw.numClass
		case "num_feature":
			dst = &raw.numFeature
		case "num_target":
			dst = &raw.numTarget
		case "boost_from_average":
			// Training only: base_score is already estimated and saved.
			return w.skip(t)
		default:
			if err := w.skip(t); err != nil {
				return err
			}
			return errUnknownField
		}
		if err := scalar(t); err != nil {
			return err
		}
		v, err := t.int()
		*dst = v
		return err
	})
}

func readBooster(w *walker, raw *rawModel) error {
	return w.object(func(key string) error {
		switch key {
		case "name":
			s, err := w.str()
			if raw.booster == "" || raw.booster == "gbtree" {
				raw.booster = s
			}
			return err
		case "model":
			// gbtree and gblinear both keep their state under "model"; tell them
			// apart by content (the name may come after).
			return readModelBody(w, raw)
		case "gbtree":
			// dart wraps a whole gbtree booster.
			return w.object(func(k string) error {
				switch k {
				case "model":
					return readModelBody(w, raw)
				case "name":
					return w.skipValue()
				}
				return w.unknown()
			})
		case "weight_drop":
			v, err := w.float32s()
			raw.weightDrop = v
			return err
		}
		return w.unknown()
	})
}

func readModelBody(w *walker, raw *rawModel) error {
	return w.object(func(key string) error {
		var err error
		switch key {
		case "gbtree_model_param":
			raw.sawTreeModel = true
			err = w.object(func(k string) error {
				switch k {
				case "num_parallel_tree":
					raw.numParallel, err = w.int()
					return err
				case "num_trees":
					raw.numTreesSet = true
					raw.numTrees, err = w.int()
					return err
				}
				return w.skipValue()
			})
		case "tree_info":
			raw.sawTreeModel = true
			raw.treeInfo, err = w.int32s()
		case "trees":
			raw.sawTreeModel = true
			err = w.array(func(i int, t token) error {
				var tr rawTree
				if err := readTree(w, t, &tr); err != nil {
					return err
				}
				raw.trees = append(raw.trees, tr)
				return nil
			})
		case "weight_drop":
			raw.dartInModel = true
			raw.weightDrop, err = w.float32s()
		case "cats":
			raw.catsValues, err = w.countScalars()
		case "weights":
			raw.linSeen = true
			raw.linWeights, err = w.float32s()
		case "iteration_indptr", "boosted_rounds":
			// Trees per boosting round and rounds done: bookkeeping for
			// training and iteration ranges; predictions use every tree.
			err = w.skipValue()
		default:
			err = w.unknown()
		}
		return err
	})
}

func readTree(w *walker, start token, tr *rawTree) error {
	return w.objectFrom(start, func(key string) error {
		var err error
		switch key {
		case "left_children":
			tr.left, err = w.int32s()
		case "right_children":
			tr.right, err = w.int32s()
		case "split_indices":
			tr.splitIndex, err = w.int32s()
		case "split_conditions":
			tr.splitCond, err = w.float32s()
		case "default_left":
			tr.defaultLeft, err = w.int32s()
		case "split_type":
			tr.splitType, err = w.int32s()
		case "sum_hessian":
			tr.sumHess, err = w.float32s()
		case "categories":
			tr.categories, err = w.int64s()
		case "categories_nodes":
			tr.catNodes, err = w.int64s()
		case "categories_segments":
			tr.catSegments, err = w.int64s()
		case "categories_sizes":
			tr.catSizes, err = w.int64s()
		case "tree_param":
			tr.hasTreeParam = true
			err = w.object(func(k string) error {
				switch k {
				case "num_nodes":
					tr.numNodesSet = true
					tr.numNodes, err = w.int()
					return err
				case "size_leaf_vector":
					tr.leafVecSize, err = w.int()
					return err
				}
				return w.skipValue()
			})
		case "leaf_weights":
			// Only vector-leaf (multi-target) trees carry this array.
			tr.multiTarget = true
			tr.leafWeights, err = w.float32s()
		case "base_weights":
			tr.baseWeights, err = w.float32s()
		case "id", "loss_changes", "parents", "leaf_child_counts":
			// Training statistics and bookkeeping, not used to predict.
			err = w.skipValue()
		default:
			err = w.unknown()
		}
		return err
	})
}
