package train

import (
	"strings"
	"testing"
)

func TestClusterFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    Cluster
		wantErr string
	}{
		{name: "no env", env: nil, want: Cluster{WorldSize: 1, Source: SourceSingle}},
		{name: "training operator master", env: map[string]string{"MASTER_ADDR": "job-master-0", "MASTER_PORT": "9999", "WORLD_SIZE": "3", "RANK": "0"},
			want: Cluster{Rank: 0, WorldSize: 3, TrackerHost: "job-master-0", TrackerPort: 9999, Source: SourceTrainingOperator}},
		{name: "training operator worker default port", env: map[string]string{"MASTER_ADDR": "job-master-0", "WORLD_SIZE": "3", "RANK": "2"},
			want: Cluster{Rank: 2, WorldSize: 3, TrackerHost: "job-master-0", TrackerPort: 9999, Source: SourceTrainingOperator}},
		{name: "trainer v2", env: map[string]string{"DMLC_TRACKER_URI": "job-node-0-0.job", "DMLC_TRACKER_PORT": "9091", "DMLC_TASK_ID": "1", "DMLC_NUM_WORKER": "2"},
			want: Cluster{Rank: 1, WorldSize: 2, TrackerHost: "job-node-0-0.job", TrackerPort: 9091, Source: SourceTrainerV2}},
		{name: "rank outside world", env: map[string]string{"MASTER_ADDR": "m", "WORLD_SIZE": "2", "RANK": "2"}, wantErr: "rank 2 is outside world size 2"},
		{name: "bad number", env: map[string]string{"MASTER_ADDR": "m", "WORLD_SIZE": "two"}, wantErr: `WORLD_SIZE="two"`},
		{name: "world without master", env: map[string]string{"WORLD_SIZE": "2", "RANK": "1"}, wantErr: "MASTER_ADDR is empty"},
		{name: "zero world", env: map[string]string{"DMLC_TRACKER_URI": "h", "DMLC_NUM_WORKER": "0"}, wantErr: "world size 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ClusterFromEnv(func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

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
	kv := p.booster()
	if kv[len(kv)-2] != [2]string{"eval_metric", "auc"} || kv[len(kv)-1] != [2]string{"eval_metric", "logloss"} {
		t.Fatalf("eval metrics not last and in order: %v", kv)
	}
}
