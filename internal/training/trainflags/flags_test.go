package trainflags

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := []string{"--dataset", "iris", "--model-dir", "/mnt/pvc/models/iris/v1"}
	if err := Check(append(base, "--num-round", "100000", "--eta", "0.1", "--param", "gamma=1")); err != nil {
		t.Fatalf("a good command line: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-round", "100001"}, "num_round 100001: want at most 100000"},
		{[]string{"--num-round", "0"}, "num_round 0: want at least 1"},
		{[]string{"--eta", "0"}, "eta 0: want more than 0"},
		{[]string{"--eta", "NaN"}, "eta NaN"},
		{[]string{"--eta", "+Inf"}, "eta +Inf"},
		{[]string{"--subsample", "1.5"}, "subsample 1.5: want (0, 1]"},
		{[]string{"--colsample-bytree", "0"}, "colsample_bytree 0"},
		{[]string{"--min-child-weight", "-1"}, "min_child_weight -1"},
		{[]string{"--alpha", "-0.5"}, "reg_alpha -0.5"},
		{[]string{"--max-depth", "-1"}, "max_depth -1"},
		{[]string{"--nthread", "-2"}, "nthread -2"},
		{[]string{"--num-class", "-3"}, "num_class -3"},
		{[]string{"--early-stopping-rounds", "-1"}, "early_stopping_rounds -1"},
		{[]string{"--tree-method", "Hist"}, `tree_method "Hist"`},
		{[]string{"--model-format", "pickle"}, `model format "pickle"`},
		{[]string{"--eval-fraction", "1"}, "eval fraction 1"},
		{[]string{"--param", "novalue"}, "want key=value"},
		{[]string{"--param", "=1"}, "needs a name"},
		{[]string{"--num-round", "ten"}, `invalid value "ten" for flag -num-round`},
		{[]string{"--no-such-flag", "1"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--objective", "reg:linear"}, `objective "reg:linear": not an XGBoost 3.0 objective`},
		{[]string{"--param", "max_dpeth=4"}, `"max_dpeth" is not an XGBoost 3.0 training parameter (did you mean max_depth?)`},
		{[]string{"--param", "no_such_thing=1"}, `--param no_such_thing=1: "no_such_thing" is not an XGBoost 3.0 training parameter`},
		{[]string{"--param", "eta=0.1"}, "--param eta=0.1: eta has its own flag, --eta"},
		{[]string{"--param", "device=tpu"}, "--param device=tpu: want cpu, cuda, cuda:<ordinal> or gpu"},
		{[]string{"--param", "multi_strategy=vector"}, "--param multi_strategy=vector: want one of one_output_per_tree, multi_output_tree"},
		{[]string{"--param", "multi_strategy=multi_output_tree", "--tree-method", "exact"}, "vector-leaf trees with tree_method hist only"},
		{[]string{"--objective", "reg:quantileerror"}, "objective reg:quantileerror needs quantile_alpha"},
		{[]string{"--objective", "reg:quantileerror", "--param", "quantile_alpha=[0.1,1.5]"}, "--param quantile_alpha=[0.1,1.5]: want a quantile in (0, 1)"},
		{[]string{"--param", "quantile_alpha=0.5"}, "only objective reg:quantileerror reads it"},
		{[]string{"--param", "lambdarank_pair_method=topk"}, "a learning-to-rank parameter, read by the rank:* objectives only"},
		{[]string{"--objective", "rank:ndcg", "--param", "lambdarank_pair_method=all"}, "--param lambdarank_pair_method=all: want one of topk, mean"},
		{[]string{"--param", "max_cat_to_onehot=0"}, "--param max_cat_to_onehot=0: want an integer from 1"},
	} {
		err := Check(append(append([]string{}, base...), c.args...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	for _, good := range [][]string{
		{"--param", "device=cpu", "--param", "multi_strategy=multi_output_tree"},
		{"--objective", "reg:quantileerror", "--param", "quantile_alpha=[0.1,0.9]"},
		{"--objective", "reg:quantileerror", "--param", "quantile_alpha=0.5"},
		{"--objective", "rank:ndcg", "--param", "lambdarank_pair_method=topk", "--param", "lambdarank_num_pair_per_sample=8", "--param", "ndcg_exp_gain=false"},
		{"--param", "max_cat_to_onehot=4", "--param", "max_cat_threshold=32"},
		{"--param", "device=cuda:1"},
	} {
		if err := Check(append(append([]string{}, base...), good...)); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
	if err := Check([]string{"--num-round", "5"}); err == nil || !strings.Contains(err.Error(), "no training data") {
		t.Errorf("no data: %v", err)
	}
}

// Every tunable is a flag, so the launcher's inputs of those names reach a flag the trainer has.
func TestTunablesAreFlags(t *testing.T) {
	_, fs := New("gangboost-train")
	for _, name := range Tunables {
		if fs.Lookup(name) == nil {
			t.Errorf("tunable %q is not a gangboost-train flag", name)
		}
	}
	if InputName("colsample-bytree") != "colsample_bytree" {
		t.Error(InputName("colsample-bytree"))
	}
}
