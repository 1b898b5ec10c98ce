package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Promotion modes (the promotion input): how a new model reaches a service that already serves
// another one.
const (
	// PromotionChallenge deploys it beside the champion as a challenger (KServe's canary, 0 %
	// of the traffic by default), for evaluate to compare and promote-model to promote or
	// remove. A service that does not exist yet, or serves the same model_uri, is applied as
	// usual.
	PromotionChallenge = "challenge"
	// PromotionReplace rolls the service out to the new model directly: what a run did before
	// champion/challenger, for a user who judges models elsewhere.
	PromotionReplace = "replace"
)

// Promotions are the values of the promotion input.
var Promotions = []string{PromotionChallenge, PromotionReplace}

// Serving is what a service serves now.
type Serving struct {
	// ModelURI is the champion: the model of the stable predictor; "" when the service does not
	// exist.
	ModelURI string
	// PreviousModelURI is the champion before it (recorded at its promotion), "" when none.
	PreviousModelURI string
	// StableName is the champion's predictor name beside which challengers are named.
	StableName string
	// Challengers are the names of the challengers deployed beside it (KServe canaries).
	Challengers []string
}

// Challenger is a model deployed beside the champion.
type Challenger struct {
	// Name is its name beside the champion: KServe's canary predictor name, part of its
	// Deployment's and Service's names ({service}-{name}-predictor).
	Name string
	// TrafficPercent of the requests to the service go to it (0: none, a dark launch).
	TrafficPercent int32
	// Champion is the model it challenges: the promotion goes ahead only while that model
	// still serves.
	Champion string
}

// Promoter is a serving Backend that can deploy a challenger beside the champion, then promote
// it (the stable predictor becomes the challenger's, without restarting its pods) or remove it.
type Promoter interface {
	Backend
	// Serving reads what the service serves now.
	Serving(ctx context.Context, s *Service) (*Serving, error)
	// ApplyChallenger deploys s's model as challenger c beside the champion; the champion keeps
	// serving as it does.
	ApplyChallenger(ctx context.Context, s *Service, c Challenger) error
	// WaitChallenger returns the challenger's endpoint and the champion's once both answer. A
	// challenger that cannot serve is removed before the error returns.
	WaitChallenger(ctx context.Context, s *Service, c Challenger, progress func(string)) (challenger, champion *Endpoint, err error)
	// Promote makes challenger c the service's stable model and records c.Champion as the
	// previous one; a *ChampionChangedError when c.Champion no longer serves.
	Promote(ctx context.Context, s *Service, c Challenger) error
	// Reject removes challenger c; the champion serves on untouched.
	Reject(ctx context.Context, s *Service, c Challenger) error
}

// TrafficSplitter is a Promoter that can say whether a challenger's share of the traffic would
// really reach it: KServe splits the traffic of a raw deployment only through an ingress that
// can (Gateway API HTTPRoute weights); its Services alone send nothing to a canary.
type TrafficSplitter interface {
	// SplitsTraffic reports whether a challenger of s would get its share of the requests, and
	// why not.
	SplitsTraffic(ctx context.Context, s *Service) (bool, string)
}

// ChampionChangedError is a promotion whose champion was replaced since the challenger was
// compared with it (another run promoted first).
type ChampionChangedError struct {
	Service, Compared, Serving string
}

func (e *ChampionChangedError) Error() string {
	return fmt.Sprintf("%s: the champion changed while this run compared with it: %s serves now, not %s; the challenger was removed, run again to compare with %s",
		e.Service, e.Serving, e.Compared, e.Serving)
}

// maxChallengerName bounds a challenger's name; with the service's name it must also keep
// "{service}-{challenger}-predictor" a DNS label (63 characters): a service name of at most
// MaxChallengedName leaves room for the 9 characters of the hashed form.
const maxChallengerName = 20

// MaxChallengedName is the longest service name a challenger can be deployed beside.
const MaxChallengedName = 63 - len("--predictor") - 9

// ChallengerName is a challenger's name for a model: its version folder made a DNS label
// (models/iris/run-1a2b3c4d: run-1a2b3c4d), or "c" and 8 hex digits of the URI's sha256 where
// the version does not make one, the service name leaves no room for it, or a predictor beside
// it has that name already (taken: the stable predictor's, say, when another store holds a
// version of the same name).
func ChallengerName(service, modelURI string, taken ...string) string {
	room := min(maxChallengerName, 63-len(service)-len("--predictor"))
	var b strings.Builder
	for _, r := range strings.ToLower(path.Base(strings.TrimRight(modelURI, "/"))) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == '_':
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name != "" && name[0] >= 'a' && name[0] <= 'z' && len(name) <= room && !strings.Contains(name, "--") && !slices.Contains(taken, name) {
		return name
	}
	sum := sha256.Sum256([]byte(modelURI))
	return "c" + hex.EncodeToString(sum[:4])
}
