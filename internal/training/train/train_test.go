package train

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/training/gangenv"
	"github.com/gangboost/gangboost/internal/training/gangwatch"
)

func TestParseEvalLine(t *testing.T) {
	got, err := parseEvalLine("[3]\ttrain-mlogloss:0.125\teval-mlogloss:0.25\teval-ndcg@5:0.9")
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{{"train-mlogloss", 0.125}, {"eval-mlogloss", 0.25}, {"eval-ndcg@5", 0.9}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if _, err := parseEvalLine("[3]\ttrain-rmse"); err == nil {
		t.Fatal("field without a value accepted")
	}
}

func TestEarlyStopping(t *testing.T) {
	cases := []struct {
		metric   string
		values   []float64
		stopAt   int
		bestSeen int
	}{
		{"eval-logloss", []float64{0.5, 0.4, 0.41, 0.39, 0.4}, -1, 3},
		{"eval-logloss", []float64{0.5, 0.4, 0.41, 0.42, 0.43}, 3, 1},
		{"eval-auc", []float64{0.7, 0.8, 0.79, 0.78, 0.9}, 3, 1},
		{"eval-ndcg@10", []float64{0.7, 0.8, 0.81}, -1, 2},
	}
	for _, c := range cases {
		e := earlyStopper{patience: 2}
		stopped := -1
		for i, v := range c.values {
			if e.observe(i, Metric{c.metric, v}) {
				stopped = i
				break
			}
		}
		if stopped != c.stopAt || e.bestRound != c.bestSeen {
			t.Errorf("%s %v: stopped at %d best %d; want %d, %d", c.metric, c.values, stopped, e.bestRound, c.stopAt, c.bestSeen)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	p := DefaultParams()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Params){
		func(p *Params) { p.NumRound = 0 },
		func(p *Params) { p.Eta = 0 },
		func(p *Params) { p.Subsample = 1.5 },
		func(p *Params) { p.Objective = "" },
	}
	for i, f := range bad {
		q := DefaultParams()
		f(&q)
		if q.Validate() == nil {
			t.Errorf("case %d: invalid params accepted: %+v", i, q)
		}
	}
	p.EvalMetric = []string{"auc", "logloss"}
	kv := p.Booster()
	if kv[len(kv)-2] != [2]string{"eval_metric", "auc"} || kv[len(kv)-1] != [2]string{"eval_metric", "logloss"} {
		t.Fatalf("eval metrics not last and in order: %v", kv)
	}
}

// --gang-start-timeout bounds libxgboost's tracker's wait as well as the gang watch's: a rank that
// never joins fails the tracker after that time, not after the tracker's own default (300 s).
func TestTrackerUsesTheGangStartTimeout(t *testing.T) {
	// The tracker's port and the gang watch's after it, outside the ephemeral range: a ":0"
	// port's successor may be anybody's.
	port, err := netport.Pick(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// libxgboost's tracker counts its timeout in whole seconds.
	job := Job{Watch: gangwatch.Options{StartTimeout: time.Second}, WatchPort: 0}
	cl := gangenv.Cluster{Rank: 0, WorldSize: 2, TrackerHost: "127.0.0.1", TrackerPort: port}
	g, err := joinGang(ctx, job, cl, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	// Rank 1 never comes: the tracker must give up with the gang's start timeout, long before
	// its own default (the hang guard is the context's minute).
	tr := g.(*serverGang).tr
	select {
	case <-tr.Done():
	case <-ctx.Done():
		t.Fatal("libxgboost's tracker still waits for rank 1 after a minute; the gang's start timeout is 1s")
	}
	if err := tr.Err(); err == nil {
		t.Fatal("libxgboost's tracker ended without an error although rank 1 never joined")
	} else {
		t.Logf("tracker: %v", err)
	}
}

func TestJobValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Job)
		want string // "" for valid
	}{
		{"defaults", func(*Job) {}, ""},
		{"ubj", func(j *Job) { j.ModelFormat = "ubj" }, ""},
		{"eval fraction 0.99", func(j *Job) { j.EvalFraction = 0.99 }, ""},
		{"no rounds", func(j *Job) { j.Params.NumRound = 0 }, "num_round 0"},
		{"pickle", func(j *Job) { j.ModelFormat = "pickle" }, `model format "pickle": want json or ubj`},
		{"eval fraction 1", func(j *Job) { j.EvalFraction = 1 }, "eval fraction 1: want 0 <= fraction < 1"},
		{"eval fraction 1.5", func(j *Job) { j.EvalFraction = 1.5 }, "eval fraction 1.5"},
		{"eval fraction negative", func(j *Job) { j.EvalFraction = -0.1 }, "eval fraction -0.1"},
		{"eval fraction NaN", func(j *Job) { j.EvalFraction = math.NaN() }, "eval fraction NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := Job{Params: DefaultParams()}
			c.edit(&j)
			err := j.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}
