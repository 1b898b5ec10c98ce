// Package policy decides whether a challenger model replaces the champion that serves: the
// champion/challenger gate of a promotion. It compares the two models' scores on the same
// held-out set by one metric, under a declared policy (if-better, always, never) and a minimum
// improvement, and says why in one sentence a person can check.
package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Modes of a policy (the promote_policy input).
const (
	// IfBetter promotes a challenger whose metric beats the champion's by more than zero and by
	// at least the minimum improvement.
	IfBetter = "if-better"
	// Always promotes any challenger that answered every call.
	Always = "always"
	// Never keeps the champion; the challenger is only measured.
	Never = "never"
)

// Modes are the policies a run may declare.
var Modes = []string{IfBetter, Always, Never}

// Metric is a score the gate can compare, and which way is better.
type Metric struct {
	Name          string
	LowerIsBetter bool
	// Classifier and Regression say which models it applies to; Binary that it needs two
	// classes.
	Classifier, Regression, Binary bool
}

// Metrics are the metrics evaluate measures on both models.
var Metrics = []Metric{
	{Name: "logloss", LowerIsBetter: true, Classifier: true},
	{Name: "accuracy", Classifier: true},
	{Name: "auc", Classifier: true, Binary: true},
	{Name: "rmse", LowerIsBetter: true, Regression: true},
}

// Policy is a declared promotion rule.
type Policy struct {
	Mode   string
	Metric Metric
	// MinImprovement is how much better (in the metric's own units, >= 0) the challenger must
	// be under IfBetter.
	MinImprovement float64
}

// Parse checks a declared policy against the model being judged: a classifier (with classes
// classes) or a regression model. An empty metric is the task's default: logloss for classifiers,
// rmse for regression.
func Parse(mode, metric string, minImprovement float64, classifier bool, classes int) (Policy, error) {
	var errs []error
	if !slices.Contains(Modes, mode) {
		errs = append(errs, fmt.Errorf("promote_policy %q: want one of %s", mode, strings.Join(Modes, ", ")))
	}
	if math.IsNaN(minImprovement) || math.IsInf(minImprovement, 0) || minImprovement < 0 {
		errs = append(errs, fmt.Errorf("min_improvement %v: want a number >= 0 (how much better, in the metric's units)", minImprovement))
	}
	if metric == "" {
		metric = "rmse"
		if classifier {
			metric = "logloss"
		}
	}
	var m Metric
	i := slices.IndexFunc(Metrics, func(m Metric) bool { return m.Name == metric })
	switch {
	case i < 0:
		names := make([]string, len(Metrics))
		for j, m := range Metrics {
			names[j] = m.Name
		}
		errs = append(errs, fmt.Errorf("promote_metric %q: want one of %s (empty: logloss for classifiers, rmse for regression)", metric, strings.Join(names, ", ")))
	case classifier && !Metrics[i].Classifier:
		errs = append(errs, fmt.Errorf("promote_metric %q measures regression models; this model is a classifier: use logloss, accuracy or auc", metric))
	case !classifier && !Metrics[i].Regression:
		errs = append(errs, fmt.Errorf("promote_metric %q measures classifiers; this model is a regression model: use rmse", metric))
	case Metrics[i].Binary && classes != 2:
		errs = append(errs, fmt.Errorf("promote_metric %q needs a binary classifier; this model has %d classes: use logloss or accuracy", metric, classes))
	default:
		m = Metrics[i]
	}
	if err := errors.Join(errs...); err != nil {
		return Policy{}, err
	}
	return Policy{Mode: mode, Metric: m, MinImprovement: minImprovement}, nil
}

// Side is one model's measurement on the held-out set.
type Side struct {
	// Model names it in sentences: its version or URI.
	Model string
	// Scores by metric name; Errors counts calls that failed or timed out (a side with errors
	// has no trustworthy scores).
	Scores map[string]float64
	Errors int
	// Failure says why its evaluation failed, "" when it did not.
	Failure string
}

// Decision is the gate's verdict.
type Decision struct {
	Promote bool
	// Reason is one sentence: "run-b promoted over run-a: logloss 0.121 vs 0.134, improvement
	// 0.013 >= 0.005".
	Reason string
	Metric string
	// Champion and Challenger are the compared values (NaN when a side has none); Improvement
	// is how much better the challenger is (positive: better), in the metric's units.
	Champion, Challenger, Improvement float64
}

// Decide judges the challenger against the champion. A challenger with failed calls never wins,
// whatever the policy; a champion with failed calls loses to a challenger without (what serves
// is broken), unless the policy is never.
func Decide(p Policy, champion, challenger Side) Decision {
	m := p.Metric.Name
	d := Decision{Metric: m, Champion: score(champion, m), Challenger: score(challenger, m), Improvement: math.NaN()}
	if !math.IsNaN(d.Champion) && !math.IsNaN(d.Challenger) {
		d.Improvement = d.Challenger - d.Champion
		if p.Metric.LowerIsBetter {
			d.Improvement = d.Champion - d.Challenger
		}
	}
	vs := fmt.Sprintf("%s %.6g vs %.6g", m, d.Challenger, d.Champion)
	switch {
	case challenger.Errors > 0 || challenger.Failure != "":
		d.Reason = fmt.Sprintf("%s rejected: %s", challenger.Model, failed(challenger))
	case p.Mode == Never:
		d.Reason = fmt.Sprintf("%s kept (promote_policy never): %s", champion.Model, vs)
	case champion.Errors > 0 || champion.Failure != "":
		d.Promote = true
		d.Reason = fmt.Sprintf("%s promoted over %s, which %s", challenger.Model, champion.Model, failed(champion))
	case p.Mode == Always:
		d.Promote = true
		d.Reason = fmt.Sprintf("%s promoted over %s (promote_policy always): %s", challenger.Model, champion.Model, vs)
	case math.IsNaN(d.Improvement):
		d.Reason = fmt.Sprintf("%s rejected: %s has no %s to compare (%s)", challenger.Model, missing(champion, challenger, m), m, vs)
	case d.Improvement > 0 && d.Improvement >= p.MinImprovement:
		d.Promote = true
		d.Reason = fmt.Sprintf("%s promoted over %s: %s, improvement %.3g >= min_improvement %g", challenger.Model, champion.Model, vs, d.Improvement, p.MinImprovement)
	default:
		d.Reason = fmt.Sprintf("%s rejected, %s kept: %s, improvement %.3g, want more than 0 and at least min_improvement %g", challenger.Model, champion.Model, vs, d.Improvement, p.MinImprovement)
	}
	return d
}

func score(s Side, metric string) float64 {
	if v, ok := s.Scores[metric]; ok && !math.IsNaN(v) && s.Errors == 0 && s.Failure == "" {
		return v
	}
	return math.NaN()
}

func failed(s Side) string {
	if s.Failure != "" {
		return fmt.Sprintf("failed %d call(s): %s", max(s.Errors, 1), s.Failure)
	}
	return fmt.Sprintf("failed %d call(s)", s.Errors)
}

func missing(champion, challenger Side, metric string) string {
	if math.IsNaN(score(champion, metric)) {
		return champion.Model
	}
	return challenger.Model
}
