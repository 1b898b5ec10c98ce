package trainflags

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Params are the XGBoost training parameters, named as in XGBoost's documentation.
type Params struct {
	Objective           string
	NumRound            int
	MaxDepth            int
	Eta                 float64
	Subsample           float64
	ColsampleBytree     float64
	MinChildWeight      float64
	Lambda              float64
	Alpha               float64
	TreeMethod          string
	NThread             int
	Seed                int
	NumClass            int      // 0: from the label column for multi:* objectives
	EvalMetric          []string // empty: the objective's default
	EarlyStoppingRounds int      // 0: off
	// Categorical names the feature columns trained as categorical (feature_type "c"): each holds
	// category codes, integers from 0, and libxgboost splits on sets of them.
	Categorical []string
	Extra       map[string]string
}

// DefaultParams are XGBoost's defaults, with the hist tree method.
func DefaultParams() Params {
	return Params{
		Objective: "reg:squarederror", NumRound: 100, MaxDepth: 6, Eta: 0.3, Subsample: 1,
		ColsampleBytree: 1, MinChildWeight: 1, Lambda: 1, Alpha: 0, TreeMethod: "hist",
	}
}

// MaxNumRound bounds num_round. Each round logs a line per metric and adds a tree per class to
// the model: 400000 rounds wrote 82 MB of logs. 100000 rounds is far beyond what a learning rate
// needs (XGBoost's examples use tens to a few thousand), and early_stopping_rounds ends a long
// run as soon as the evaluation stops improving.
const MaxNumRound = 100000

// TreeMethods are the tree_method values libxgboost 3.0 accepts (gpu_hist: XGBoost 1.x's
// spelling of hist with device=cuda, deprecated but still read).
var TreeMethods = []string{"auto", "exact", "approx", "hist", "gpu_hist"}

// Validate rejects values XGBoost would reject later, with the parameter's name and the valid
// range. Comparisons are written so that NaN fails every one of them.
func (p Params) Validate() error {
	switch {
	case p.Objective == "":
		return fmt.Errorf("objective: must be set")
	case p.NumRound < 1:
		return fmt.Errorf("num_round %d: want at least 1", p.NumRound)
	case p.NumRound > MaxNumRound:
		return fmt.Errorf("num_round %d: want at most %d (early_stopping_rounds ends a run sooner)", p.NumRound, MaxNumRound)
	case p.MaxDepth < 0:
		return fmt.Errorf("max_depth %d: want 0 or more", p.MaxDepth)
	case !(p.Eta > 0) || math.IsInf(p.Eta, 0):
		return fmt.Errorf("eta %g: want more than 0", p.Eta)
	case !(p.Subsample > 0 && p.Subsample <= 1):
		return fmt.Errorf("subsample %g: want (0, 1]", p.Subsample)
	case !(p.ColsampleBytree > 0 && p.ColsampleBytree <= 1):
		return fmt.Errorf("colsample_bytree %g: want (0, 1]", p.ColsampleBytree)
	case !(p.MinChildWeight >= 0) || math.IsInf(p.MinChildWeight, 0):
		return fmt.Errorf("min_child_weight %g: want 0 or more", p.MinChildWeight)
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0):
		return fmt.Errorf("reg_lambda %g: want 0 or more", p.Lambda)
	case !(p.Alpha >= 0) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("reg_alpha %g: want 0 or more", p.Alpha)
	case !slices.Contains(TreeMethods, p.TreeMethod):
		return fmt.Errorf("tree_method %q: want one of %s", p.TreeMethod, strings.Join(TreeMethods, ", "))
	case p.NThread < 0:
		return fmt.Errorf("nthread %d: want 0 (all cores) or more", p.NThread)
	case p.NumClass < 0:
		return fmt.Errorf("num_class %d: want 0 (from the labels) or more", p.NumClass)
	case p.EarlyStoppingRounds < 0:
		return fmt.Errorf("early_stopping_rounds %d: want 0 or more", p.EarlyStoppingRounds)
	}
	for k := range p.Extra {
		if k == "" {
			return errors.New("--param =...: an XGBoost parameter needs a name (key=value)")
		}
	}
	if !slices.Contains(Objectives, p.Objective) {
		return fmt.Errorf("objective %q: not an XGBoost 3.0 objective; want one of %s", p.Objective, strings.Join(Objectives, ", "))
	}
	return p.checkExtra()
}

// IsMultiClass reports whether the objective needs num_class.
func (p Params) IsMultiClass() bool { return strings.HasPrefix(p.Objective, "multi:") }

// Booster returns the parameters as libxgboost's key/value pairs in a stable order.
// eval_metric comes last and may repeat: libxgboost appends each one.
func (p Params) Booster() [][2]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	kv := [][2]string{
		{"objective", p.Objective},
		{"max_depth", strconv.Itoa(p.MaxDepth)},
		{"eta", f(p.Eta)},
		{"subsample", f(p.Subsample)},
		{"colsample_bytree", f(p.ColsampleBytree)},
		{"min_child_weight", f(p.MinChildWeight)},
		{"lambda", f(p.Lambda)},
		{"alpha", f(p.Alpha)},
		{"tree_method", p.TreeMethod},
		{"nthread", strconv.Itoa(p.NThread)},
		{"seed", strconv.Itoa(p.Seed)},
	}
	if p.NumClass > 0 {
		kv = append(kv, [2]string{"num_class", strconv.Itoa(p.NumClass)})
	}
	keys := make([]string, 0, len(p.Extra))
	for k := range p.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, [2]string{k, p.Extra[k]})
	}
	for _, m := range p.EvalMetric {
		kv = append(kv, [2]string{"eval_metric", m})
	}
	return kv
}

// FeatureTypes are libxgboost's feature_type of each of the features named: "c" for a
// categorical one, "q" (quantitative) for the others; nil without categorical features. A
// categorical name that is not a feature is an error naming the features.
func (p Params) FeatureTypes(features []string) ([]string, error) {
	if len(p.Categorical) == 0 {
		return nil, nil
	}
	types := make([]string, len(features))
	for i := range types {
		types[i] = "q"
	}
	for _, c := range p.Categorical {
		i := slices.Index(features, c)
		if i < 0 {
			return nil, fmt.Errorf("--categorical %s: no feature column %q (the features: %s)", strings.Join(p.Categorical, ","), c, strings.Join(features, ", "))
		}
		types[i] = "c"
	}
	return types, nil
}

// Map returns the parameters as recorded in metadata.json.
func (p Params) Map() map[string]string {
	m := map[string]string{}
	for _, kv := range p.Booster() {
		if kv[0] == "eval_metric" {
			continue
		}
		m[kv[0]] = kv[1]
	}
	m["num_round"] = strconv.Itoa(p.NumRound)
	if len(p.EvalMetric) > 0 {
		m["eval_metric"] = strings.Join(p.EvalMetric, ",")
	}
	if p.EarlyStoppingRounds > 0 {
		m["early_stopping_rounds"] = strconv.Itoa(p.EarlyStoppingRounds)
	}
	if len(p.Categorical) > 0 {
		m["categorical"] = strings.Join(p.Categorical, ",")
	}
	return m
}
