// Package promote applies the champion/challenger verdict of a run to the service it deployed
// into: a challenger that won becomes the service's model (KServe's zero-restart retarget of
// the stable predictor; locally, its process takes the service's name), one that lost is removed
// and the champion serves on untouched. Either way the service ends with one model, and the
// model it replaced is recorded for a rollback. The verdict itself is evaluate's (package
// promote/policy).
package promote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/register"
)

// Request is one run's verdict on its model.
type Request struct {
	// Service is the service the run deployed into, with the run's model as ModelURI.
	Service *deploy.Service
	// ChampionModelURI is the champion the model was compared with and Challenger the name it
	// was deployed under beside it; both "" when the model became the service's own at deploy
	// (there was no champion).
	ChampionModelURI, Challenger string
	// Promote is evaluate's verdict and Reason its sentence.
	Promote bool
	Reason  string
	// Watch, when its Window is set, watches the challenger serving its share of the traffic
	// before a promotion: its runtime's metrics at ChallengerURL/metrics must stay within the
	// bounds, or it is removed instead. HTTP reads them (nil: a client with a 30 s timeout).
	Watch         Watch
	ChallengerURL string
	HTTP          *http.Client
	// Registry, when set, records which version serves the service once the verdict is applied.
	Registry *register.Client
	// Drain is how long a promotion keeps the replaced champion answering at its old address
	// (the kube backend's PromotionDrain).
	Drain time.Duration
}

// Result is what serves once the verdict is applied.
type Result struct {
	Promoted                          bool
	ServingModelURI, PreviousModelURI string
	// WatchFailed says why a challenger the verdict promoted was removed after its watch.
	WatchFailed string
}

// watchChallenger watches the challenger for r.Watch.Window and judges what its runtime saw. No
// request in the window (nothing split traffic to it) leaves the verdict to the comparison on
// the test set.
func watchChallenger(ctx context.Context, r Request) (bool, string, error) {
	if r.ChallengerURL == "" {
		return false, "", errors.New("no challenger_url to watch")
	}
	hc := r.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	t, err := observe(ctx, hc, strings.TrimRight(r.ChallengerURL, "/")+"/metrics", r.Service.Name, r.Watch.Window)
	if err != nil {
		return false, "", err
	}
	if t.Requests == 0 {
		return true, fmt.Sprintf("no request reached the challenger in %s (nothing split traffic to it): the comparison on the test set decides", r.Watch.Window), nil
	}
	ok, why := r.Watch.judge(t)
	return ok, why, nil
}

// Run applies the verdict through the backend. A promotion whose champion was replaced meanwhile
// (another run promoted first) removes the challenger and fails with *deploy.ChampionChangedError.
func Run(ctx context.Context, p deploy.Promoter, r Request, log io.Writer) (*Result, error) {
	if log == nil {
		log = io.Discard
	}
	s := r.Service
	printf := func(format string, args ...any) {
		fmt.Fprintf(log, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
	}
	serving, err := p.Serving(ctx, s)
	if err != nil {
		return nil, err
	}
	if r.ChampionModelURI == "" {
		// Deploy made the model the service's own: nothing to promote, but what serves must
		// still be it.
		if serving.ModelURI != s.ModelURI {
			return nil, fmt.Errorf("%s serves %s, not this run's %s: another run deployed into it after this one; nothing was changed",
				s.Name, orNothing(serving.ModelURI), s.ModelURI)
		}
		printf("%s serves %s, deployed with no champion to compare with", s.Name, s.ModelURI)
		return &Result{Promoted: true, ServingModelURI: s.ModelURI, PreviousModelURI: serving.PreviousModelURI}, nil
	}
	if r.Challenger == "" {
		return nil, errors.New("champion_model_uri is set but challenger is empty: pass deploy-inferenceservice's challenger output")
	}
	c := deploy.Challenger{Name: r.Challenger, Champion: r.ChampionModelURI}
	printf("verdict: %s", r.Reason)
	if !r.Promote {
		if err := p.Reject(ctx, s, c); err != nil {
			return nil, fmt.Errorf("remove challenger %s of %s: %w", c.Name, s.Name, err)
		}
		printf("removed challenger %s (%s); %s serves %s as before", c.Name, s.ModelURI, s.Name, r.ChampionModelURI)
		return &Result{ServingModelURI: r.ChampionModelURI, PreviousModelURI: serving.PreviousModelURI}, nil
	}
	if r.Watch.Window > 0 {
		ok, why, err := watchChallenger(ctx, r)
		if err != nil {
			// Asked to watch and could not: nothing unwatched takes the traffic.
			why, ok = fmt.Sprintf("the challenger could not be watched: %v", err), false
		}
		printf("watch: %s", why)
		if !ok {
			if err := p.Reject(ctx, s, c); err != nil {
				return nil, fmt.Errorf("remove challenger %s of %s after its watch: %w", c.Name, s.Name, err)
			}
			printf("removed challenger %s (%s) after its watch; %s serves %s as before", c.Name, s.ModelURI, s.Name, r.ChampionModelURI)
			return &Result{ServingModelURI: r.ChampionModelURI, PreviousModelURI: serving.PreviousModelURI, WatchFailed: why}, nil
		}
	}
	start := time.Now()
	if err := p.Promote(ctx, s, c); err != nil {
		return nil, err
	}
	printf("promoted challenger %s in %s: %s serves %s; the previous champion %s is recorded for a rollback",
		c.Name, time.Since(start).Round(time.Millisecond), s.Name, s.ModelURI, r.ChampionModelURI)
	return &Result{Promoted: true, ServingModelURI: s.ModelURI, PreviousModelURI: r.ChampionModelURI}, nil
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// RecordServing tells the registry (r.Registry) that res.ServingModelURI serves r.Service: the
// version evaluate registered, or, for a champion registered before the registry was configured,
// the version with its artifact URI alone.
func RecordServing(ctx context.Context, r Request, res *Result, log io.Writer) error {
	if r.Registry == nil || res.ServingModelURI == "" {
		return nil
	}
	s := r.Service
	version := register.VersionOf(res.ServingModelURI)
	rec, err := r.Registry.Find(ctx, s.Name, version)
	if err != nil {
		return err
	}
	if rec == nil {
		if rec, err = r.Registry.RegisterVersion(ctx, register.Model{Name: s.Name, Version: version, URI: res.ServingModelURI, RunID: s.RunID}); err != nil {
			return err
		}
	}
	id, err := r.Registry.RecordServing(ctx, rec, register.Serving{Name: s.Name, Namespace: s.Namespace, Runtime: s.Runtime})
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "model registry: %s/%s serves as InferenceService %s/%s (registry inference service %s)\n", s.Name, version, s.Namespace, s.Name, id)
	return nil
}
