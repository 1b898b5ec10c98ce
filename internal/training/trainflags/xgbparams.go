package trainflags

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The parameters --param passes to libxgboost 3.0 (XGBoosterSetParam), each with the check the
// trainer and launch-xgboostjob run before a gang is created: a typo or a value libxgboost would
// refuse fails in launch, naming the parameter, instead of inside the pods after the gang was
// scheduled (or, worse, a parameter libxgboost ignores with a warning while the job succeeds).
// Names and values are XGBoost 3.0's: https://xgboost.readthedocs.io/en/release_3.0.0/parameter.html.
// The parameters with a flag of their own (objective, eta, max_depth, ...) are checked in
// Params.Validate.
var xgbParams = map[string]func(string) error{
	// General parameters.
	"booster":                     oneOf("gbtree", "gblinear", "dart"),
	"device":                      deviceValue,
	"verbosity":                   intIn(0, 3),
	"validate_parameters":         boolValue,
	"disable_default_eval_metric": boolValue,
	// Tree booster.
	"gamma":                       floatAtLeast(0),
	"min_split_loss":              floatAtLeast(0),
	"max_delta_step":              floatAtLeast(0),
	"sampling_method":             oneOf("uniform", "gradient_based"),
	"colsample_bylevel":           fraction,
	"colsample_bynode":            fraction,
	"scale_pos_weight":            floatAtLeast(0),
	"updater":                     anyValue,
	"refresh_leaf":                boolValue,
	"process_type":                oneOf("default", "update"),
	"grow_policy":                 oneOf("depthwise", "lossguide"),
	"max_leaves":                  intIn(0, math.MaxInt32),
	"max_bin":                     intIn(2, math.MaxInt32),
	"num_parallel_tree":           intIn(1, math.MaxInt32),
	"monotone_constraints":        anyValue,
	"interaction_constraints":     anyValue,
	"multi_strategy":              oneOf("one_output_per_tree", "multi_output_tree"),
	"max_cached_hist_node":        intIn(1, math.MaxInt32),
	"max_cat_to_onehot":           intIn(1, math.MaxInt32),
	"max_cat_threshold":           intIn(1, math.MaxInt32),
	"learning_rate":               floatAbove(0),
	"reg_lambda":                  floatAtLeast(0),
	"reg_alpha":                   floatAtLeast(0),
	"sketch_ratio":                floatAbove(0),
	"seed_per_iteration":          boolValue,
	"base_score":                  anyFloat,
	"tweedie_variance_power":      floatBetween(1, 2),
	"huber_slope":                 floatAbove(0),
	"quantile_alpha":              quantileAlpha,
	"aft_loss_distribution":       oneOf("normal", "logistic", "extreme"),
	"aft_loss_distribution_scale": floatAbove(0),
	// DART booster.
	"sample_type":    oneOf("uniform", "weighted"),
	"normalize_type": oneOf("tree", "forest"),
	"rate_drop":      floatBetween(0, 1),
	"one_drop":       boolValue,
	"skip_drop":      floatBetween(0, 1),
	// Linear booster.
	"feature_selector": oneOf("cyclic", "shuffle", "random", "greedy", "thrifty"),
	"top_k":            intIn(0, math.MaxInt32),
	// Learning to rank (XGBoost 2.0's).
	"lambdarank_pair_method":         oneOf("topk", "mean"),
	"lambdarank_num_pair_per_sample": intIn(1, math.MaxInt32),
	"lambdarank_normalization":       boolValue,
	"lambdarank_score_normalization": boolValue,
	"lambdarank_unbiased":            boolValue,
	"lambdarank_bias_norm":           floatAtLeast(0),
	"ndcg_exp_gain":                  boolValue,
}

// Objectives are the objective values libxgboost 3.0 accepts.
var Objectives = []string{
	"reg:squarederror", "reg:squaredlogerror", "reg:logistic", "reg:pseudohubererror",
	"reg:absoluteerror", "reg:quantileerror", "reg:gamma", "reg:tweedie",
	"binary:logistic", "binary:logitraw", "binary:hinge",
	"count:poisson", "survival:cox", "survival:aft",
	"multi:softmax", "multi:softprob",
	"rank:ndcg", "rank:map", "rank:pairwise",
}

// ownFlags are parameters with a flag of their own: --param cannot set them behind the flag's back.
var ownFlags = map[string]string{
	"objective": "--objective", "num_round": "--num-round", "max_depth": "--max-depth", "eta": "--eta",
	"subsample": "--subsample", "colsample_bytree": "--colsample-bytree",
	"min_child_weight": "--min-child-weight", "lambda": "--reg-lambda", "alpha": "--reg-alpha",
	"tree_method": "--tree-method", "nthread": "--nthread", "seed": "--seed", "num_class": "--num-class",
	"eval_metric": "--eval-metric", "early_stopping_rounds": "--early-stopping-rounds",
}

// checkExtra checks the --param parameters, then what holds between them and the objective.
func (p Params) checkExtra() error {
	keys := make([]string, 0, len(p.Extra))
	for k := range p.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p.Extra[k]
		if flag, ok := ownFlags[k]; ok {
			return fmt.Errorf("--param %s=%s: %s has its own flag, %s (the pipeline's input %s)", k, v, k, flag, k)
		}
		check, ok := xgbParams[k]
		if !ok {
			msg := fmt.Sprintf("--param %s=%s: %q is not an XGBoost 3.0 training parameter", k, v, k)
			if near := nearest(k); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			return fmt.Errorf("%s; see https://xgboost.readthedocs.io/en/release_3.0.0/parameter.html", msg)
		}
		if err := check(v); err != nil {
			return fmt.Errorf("--param %s=%s: %w", k, v, err)
		}
	}
	_, hasAlpha := p.Extra["quantile_alpha"]
	switch {
	case p.Objective == "reg:quantileerror" && !hasAlpha:
		return fmt.Errorf("objective reg:quantileerror needs quantile_alpha (e.g. --param quantile_alpha=0.5, or [0.1,0.9] for two quantiles)")
	case hasAlpha && p.Objective != "reg:quantileerror":
		return fmt.Errorf("--param quantile_alpha=%s: only objective reg:quantileerror reads it (objective is %s)", p.Extra["quantile_alpha"], p.Objective)
	case p.Extra["multi_strategy"] == "multi_output_tree" && p.TreeMethod != "hist" && p.TreeMethod != "auto":
		return fmt.Errorf("--param multi_strategy=multi_output_tree: libxgboost grows vector-leaf trees with tree_method hist only (tree_method is %s)", p.TreeMethod)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, "lambdarank_") || k == "ndcg_exp_gain" {
			if !strings.HasPrefix(p.Objective, "rank:") {
				return fmt.Errorf("--param %s=%s: a learning-to-rank parameter, read by the rank:* objectives only (objective is %s)", k, p.Extra[k], p.Objective)
			}
		}
	}
	return nil
}

// UsesGPU names the setting that asks libxgboost for a GPU ("" if none): device cuda or gpu,
// or tree_method gpu_hist (XGBoost 1.x's spelling of hist on the GPU).
func (p Params) UsesGPU() string {
	if d := p.Extra["device"]; d != "" && d != "cpu" {
		return "device=" + d
	}
	if p.TreeMethod == "gpu_hist" {
		return "tree_method=gpu_hist"
	}
	return ""
}

func nearest(k string) string {
	best, bestD := "", 3 // at most two edits away
	names := make([]string, 0, len(xgbParams)+len(ownFlags))
	for n := range xgbParams {
		names = append(names, n)
	}
	for n := range ownFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if d := editDistance(k, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func anyValue(string) error { return nil }

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("want one of %s", strings.Join(values, ", "))
	}
}

func boolValue(v string) error {
	switch v {
	case "0", "1", "true", "false":
		return nil
	}
	return fmt.Errorf("want true or false (or 1, 0)")
}

func intIn(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		return nil
	}
}

func parseFinite(v string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func anyFloat(v string) error {
	if _, ok := parseFinite(v); !ok {
		return fmt.Errorf("want a number")
	}
	return nil
}

func floatAtLeast(lo float64) func(string) error {
	return func(v string) error {
		if f, ok := parseFinite(v); !ok || f < lo {
			return fmt.Errorf("want a number of %g or more", lo)
		}
		return nil
	}
}

func floatAbove(lo float64) func(string) error {
	return func(v string) error {
		if f, ok := parseFinite(v); !ok || f <= lo {
			return fmt.Errorf("want a number above %g", lo)
		}
		return nil
	}
}

func floatBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		if f, ok := parseFinite(v); !ok || f < lo || f > hi {
			return fmt.Errorf("want a number from %g to %g", lo, hi)
		}
		return nil
	}
}

func fraction(v string) error {
	if f, ok := parseFinite(v); !ok || f <= 0 || f > 1 {
		return fmt.Errorf("want (0, 1]")
	}
	return nil
}

var cudaOrdinal = regexp.MustCompile(`^(cuda|gpu)(:[0-9]+)?$`)

func deviceValue(v string) error {
	if v == "cpu" || cudaOrdinal.MatchString(v) {
		return nil
	}
	return fmt.Errorf("want cpu, cuda, cuda:<ordinal> or gpu")
}

// quantileAlpha is one quantile in (0, 1) or a list of them, as XGBoost writes it: 0.5, or
// [0.1,0.9] (each quantile is one output of the model).
func quantileAlpha(v string) error {
	s := strings.TrimSpace(v)
	list := strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")
	if list {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	parts := strings.Split(s, ",")
	for _, p := range parts {
		if f, ok := parseFinite(strings.TrimSpace(p)); !ok || f <= 0 || f >= 1 {
			return fmt.Errorf("want a quantile in (0, 1) or a list of them, e.g. 0.5 or [0.1,0.9]")
		}
	}
	return nil
}
