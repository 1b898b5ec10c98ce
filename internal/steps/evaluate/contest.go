package evaluate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/gangboost/gangboost/internal/steps/promote/policy"
)

// Rival is the model that serves today (the champion), which a new model must beat.
type Rival struct {
	// URL is the champion's V2 base URL (deploy-inferenceservice's champion_url), ModelURI its
	// model folder (champion_model_uri).
	URL, ModelURI string
}

// Contest is a challenger and the champion measured on the same test set, and the verdict.
type Contest struct {
	// Challenger and Champion are the two evaluations; nil where that side failed, with the
	// reason in ChallengerFailure or ChampionFailure.
	Challenger, Champion                 *Summary
	ChallengerFailure, ChampionFailure   string
	ChallengerModelURI, ChampionModelURI string
	Policy                               policy.Policy
	Decision                             policy.Decision
}

// PolicyInputs are the declared promotion rule, as the component's inputs give it.
type PolicyInputs struct {
	Mode, Metric   string
	MinImprovement float64
}

// check refuses a policy no model could satisfy (an unknown mode or metric, a negative minimum)
// before any call is made; whether the metric fits the model is known only once it answered.
func (p PolicyInputs) check() error {
	_, errC := policy.Parse(p.Mode, p.Metric, p.MinImprovement, true, 2)
	_, errR := policy.Parse(p.Mode, p.Metric, p.MinImprovement, false, 0)
	if errC != nil && errR != nil {
		return errC
	}
	return nil
}

// RunContest evaluates the challenger (o.URL, o.ModelURI: compared with its trainer as Run does)
// and the champion on the same test set, and judges them by the policy. A side whose evaluation
// fails (a call that fails or times out, a served model that disagrees with its trainer) is
// recorded as failed: a failed challenger never wins. The error is for what makes the contest
// itself impossible: bad options, a policy that does not fit the model.
func RunContest(ctx context.Context, o Options, champion Rival, p PolicyInputs) (*Contest, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if champion.URL == "" {
		return nil, errors.New("champion_url is empty: with no champion there is nothing to compare")
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	c := &Contest{ChallengerModelURI: o.ModelURI, ChampionModelURI: champion.ModelURI}
	fmt.Fprintf(log, "challenger %s at %s\n", orName(o.ModelURI, "(no model_uri)"), o.URL)
	s, err := Run(ctx, o)
	var disagree *DisagreementError
	switch {
	case err == nil:
		c.Challenger = s
	case errors.As(err, &disagree):
		c.Challenger, c.ChallengerFailure = s, err.Error()
	default:
		c.ChallengerFailure = err.Error()
	}
	// The champion's own trainer comparison is shown, never enforced: it was judged when it
	// was promoted.
	co := o
	co.URL, co.ModelURI, co.Tolerance = champion.URL, champion.ModelURI, -1
	fmt.Fprintf(log, "champion %s at %s\n", orName(champion.ModelURI, "(no champion_model_uri)"), champion.URL)
	if s, err := Run(ctx, co); err != nil {
		c.ChampionFailure = err.Error()
	} else {
		c.Champion = s
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	judged := c.Challenger
	if judged == nil {
		judged = c.Champion
	}
	classifier, classes := true, 2
	if judged != nil {
		classifier = judged.Classification != nil
		if classifier {
			classes = judged.Classification.Classes
		}
	}
	if c.Policy, err = policy.Parse(p.Mode, p.Metric, p.MinImprovement, classifier, classes); err != nil {
		return nil, err
	}
	c.Decision = policy.Decide(c.Policy,
		side(c.Champion, c.ChampionFailure, version(champion.ModelURI, "the champion")),
		side(c.Challenger, c.ChallengerFailure, version(o.ModelURI, "the challenger")))
	fmt.Fprintf(log, "decision: %s\n", c.Decision.Reason)
	return c, nil
}

// side is a summary as the policy sees it.
func side(s *Summary, failure, model string) policy.Side {
	sd := policy.Side{Model: model, Failure: failure, Scores: map[string]float64{}}
	if failure != "" {
		sd.Errors = 1
	}
	if s == nil {
		return sd
	}
	for name, v := range s.Metrics() {
		if f, ok := v.(float64); ok && !math.IsNaN(f) {
			sd.Scores[name] = f
		}
	}
	return sd
}

// version names a model in sentences by its folder's last element (models/iris/run-1a2b3c4d:
// run-1a2b3c4d), or by what it is.
func version(modelURI, otherwise string) string {
	if modelURI == "" {
		return otherwise
	}
	return path.Base(strings.TrimRight(modelURI, "/"))
}

func orName(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
