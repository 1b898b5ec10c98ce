package policy

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		mode, metric string
		min          float64
		classifier   bool
		classes      int
		want         string // the metric chosen, or a piece of the error
		ok           bool
	}{
		{IfBetter, "", 0, true, 3, "logloss", true},
		{IfBetter, "", 0, false, 0, "rmse", true},
		{Always, "accuracy", 0.01, true, 3, "accuracy", true},
		{Never, "auc", 0, true, 2, "auc", true},
		{IfBetter, "auc", 0, true, 3, `promote_metric "auc" needs a binary classifier; this model has 3 classes`, false},
		{IfBetter, "rmse", 0, true, 2, `promote_metric "rmse" measures regression models`, false},
		{IfBetter, "logloss", 0, false, 0, `promote_metric "logloss" measures classifiers`, false},
		{IfBetter, "f1", 0, true, 2, `promote_metric "f1": want one of logloss, accuracy, auc, rmse`, false},
		{"better", "", 0, true, 2, `promote_policy "better": want one of if-better, always, never`, false},
		{IfBetter, "", -0.1, true, 2, "min_improvement -0.1: want a number >= 0", false},
	}
	for _, c := range cases {
		p, err := Parse(c.mode, c.metric, c.min, c.classifier, c.classes)
		switch {
		case c.ok && (err != nil || p.Metric.Name != c.want || p.Mode != c.mode || p.MinImprovement != c.min):
			t.Errorf("Parse(%q, %q, %v) = %+v, %v; want metric %s", c.mode, c.metric, c.min, p, err, c.want)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Parse(%q, %q, %v) = %v; want an error saying %q", c.mode, c.metric, c.min, err, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	logloss := func(mode string, min float64) Policy {
		p, err := Parse(mode, "logloss", min, true, 3)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	accuracy, err := Parse(IfBetter, "accuracy", 0, true, 3)
	if err != nil {
		t.Fatal(err)
	}
	side := func(model string, ll, acc float64) Side {
		return Side{Model: model, Scores: map[string]float64{"logloss": ll, "accuracy": acc}}
	}
	champion := side("v6", 0.134, 0.90)
	better, worse, same := side("v7", 0.121, 0.93), side("v7", 0.150, 0.87), side("v7", 0.134, 0.90)
	broken := Side{Model: "v7", Errors: 2, Failure: "POST /v2/models/iris/infer: 503"}
	cases := []struct {
		name                 string
		p                    Policy
		champion, challenger Side
		promote              bool
		reason               string
	}{
		{"better", logloss(IfBetter, 0.005), champion, better, true, "v7 promoted over v6: logloss 0.121 vs 0.134, improvement 0.013 >= min_improvement 0.005"},
		{"better, not by enough", logloss(IfBetter, 0.02), champion, better, false, "v7 rejected, v6 kept: logloss 0.121 vs 0.134, improvement 0.013"},
		{"worse", logloss(IfBetter, 0), champion, worse, false, "v7 rejected, v6 kept: logloss 0.15 vs 0.134, improvement -0.016"},
		{"equal is not better", logloss(IfBetter, 0), champion, same, false, "improvement 0, want more than 0"},
		{"higher accuracy is better", accuracy, champion, better, true, "accuracy 0.93 vs 0.9, improvement 0.03"},
		{"lower accuracy", accuracy, champion, worse, false, "v7 rejected"},
		{"always promotes a worse one", logloss(Always, 0), champion, worse, true, "(promote_policy always)"},
		{"never", logloss(Never, 0), champion, better, false, "v6 kept (promote_policy never)"},
		{"a failing challenger never wins", logloss(Always, 0), champion, broken, false, "v7 rejected: failed 2 call(s): POST /v2/models/iris/infer: 503"},
		{"a failing champion loses", logloss(IfBetter, 0.5), Side{Model: "v6", Errors: 1, Failure: "timeout"}, worse, true, "v7 promoted over v6, which failed 1 call(s): timeout"},
		{"no score to compare", logloss(IfBetter, 0), Side{Model: "v6", Scores: map[string]float64{}}, better, false, "v6 has no logloss to compare"},
	}
	for _, c := range cases {
		d := Decide(c.p, c.champion, c.challenger)
		if d.Promote != c.promote || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: promote %v, %q; want %v with %q", c.name, d.Promote, d.Reason, c.promote, c.reason)
		}
	}
}
