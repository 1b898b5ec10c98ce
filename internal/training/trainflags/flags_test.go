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
	} {
		err := Check(append(append([]string{}, base...), c.args...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
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
