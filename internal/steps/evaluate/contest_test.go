package evaluate_test

import (
	"bytes"
	"context"
	"html"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/steps/evaluate"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/test/evaltest"
)

// TestContest: two real runtimes serving a good model (20 rounds) and a poor one (1 round, tiny
// eta) on the same Iris split. The good one wins by log loss in either seat; a poor challenger is
// rejected with both values in the reason; a challenger that does not answer never wins, whatever
// the policy, and is not an error of the step.
func TestContest(t *testing.T) {
	claim := t.TempDir()
	res := evaltest.Dataset(t, claim, prepare.Options{Dataset: "iris", Name: "iris", Seed: 42})
	goodURI := evaltest.TrainVersion(t, claim, res, "iris", "good", "--objective", "multi:softprob", "--num-round", "20")
	poorURI := evaltest.TrainVersion(t, claim, res, "iris", "poor", "--objective", "multi:softprob", "--num-round", "1", "--eta", "0.05")
	goodURL := evaltest.Serve(t, "iris", filepath.Join(claim, "models", "iris", "good"))
	poorURL := evaltest.Serve(t, "iris", filepath.Join(claim, "models", "iris", "poor"))
	ifBetter := evaluate.PolicyInputs{Mode: "if-better"}

	contest := func(challengerURL, challengerURI, championURL, championURI string, p evaluate.PolicyInputs) *evaluate.Contest {
		t.Helper()
		var log bytes.Buffer
		o := options(claim, challengerURL, res, challengerURI)
		o.Log = &log
		c, err := evaluate.RunContest(context.Background(), o, evaluate.Rival{URL: championURL, ModelURI: championURI}, p)
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		if !strings.Contains(log.String(), "decision: "+c.Decision.Reason) {
			t.Errorf("log does not carry the decision:\n%s", log.String())
		}
		return c
	}

	better := contest(goodURL, goodURI, poorURL, poorURI, ifBetter)
	if !better.Decision.Promote || better.Decision.Metric != "logloss" || better.Decision.Improvement <= 0 ||
		!strings.HasPrefix(better.Decision.Reason, "good promoted over poor: logloss ") {
		t.Errorf("a better challenger: %+v", better.Decision)
	}
	if better.Champion == nil || better.Challenger == nil || better.Champion.Rows != better.Challenger.Rows {
		t.Fatalf("both sides must be measured on the same rows: %+v", better)
	}

	worse := contest(poorURL, poorURI, goodURL, goodURI, ifBetter)
	if worse.Decision.Promote || !strings.HasPrefix(worse.Decision.Reason, "poor rejected, good kept: logloss ") {
		t.Errorf("a worse challenger: %+v", worse.Decision)
	}
	// The same numbers, seats swapped.
	if worse.Decision.Challenger != better.Decision.Champion || worse.Decision.Champion != better.Decision.Challenger {
		t.Errorf("the same models measured twice gave %v/%v and %v/%v", better.Decision.Challenger, better.Decision.Champion,
			worse.Decision.Champion, worse.Decision.Challenger)
	}
	if by := contest(poorURL, poorURI, goodURL, goodURI, evaluate.PolicyInputs{Mode: "always"}); !by.Decision.Promote {
		t.Errorf("promote_policy always kept the champion: %s", by.Decision.Reason)
	}
	if acc := contest(goodURL, goodURI, poorURL, poorURI, evaluate.PolicyInputs{Mode: "if-better", Metric: "accuracy", MinImprovement: 1}); acc.Decision.Promote {
		t.Errorf("min_improvement 1 on accuracy cannot be met: %s", acc.Decision.Reason)
	}

	// Nobody listens at the challenger's URL: it fails, so it loses even under always.
	down := "http://127.0.0.1:" + itoa(evaltest.FreePort(t))
	o := options(claim, down, res, goodURI)
	o.Timeout = 0
	c, err := evaluate.RunContest(context.Background(), o, evaluate.Rival{URL: poorURL, ModelURI: poorURI}, evaluate.PolicyInputs{Mode: "always"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Decision.Promote || c.Challenger != nil || !strings.Contains(c.Decision.Reason, "good rejected: failed 1 call(s)") {
		t.Errorf("an unreachable challenger: %+v", c.Decision)
	}

	// Policies that cannot be applied fail before any call.
	for _, p := range []evaluate.PolicyInputs{{Mode: "sometimes"}, {Mode: "if-better", Metric: "f1"}, {Mode: "if-better", MinImprovement: -1}} {
		if _, err := evaluate.RunContest(context.Background(), options(claim, goodURL, res, goodURI), evaluate.Rival{URL: poorURL}, p); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
	// rmse fits no classifier: refused once the model is known.
	if _, err := evaluate.RunContest(context.Background(), options(claim, goodURL, res, goodURI), evaluate.Rival{URL: poorURL, ModelURI: poorURI},
		evaluate.PolicyInputs{Mode: "if-better", Metric: "rmse"}); err == nil || !strings.Contains(err.Error(), "this model is a classifier") {
		t.Errorf("rmse on a classifier: %v", err)
	}
	page := string(evaluate.Report(func() *evaluate.Summary { s := better.Challenger; s.Contest = better; return s }()))
	for _, want := range []string{"Champion vs challenger", "logloss (decides)", "Confusion matrix of the champion", html.EscapeString(better.Decision.Reason)} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
