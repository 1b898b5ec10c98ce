package promote_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/deploy/local"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/internal/steps/promote"
	"github.com/gangboost/gangboost/test/evaltest"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestWatch: a challenger the verdict promotes is watched first, by its runtime's own metrics.
// One that answers its traffic with errors is removed and the champion serves on; one that no
// request reached is promoted on the comparison alone, and the step says so.
func TestWatch(t *testing.T) {
	claim := t.TempDir()
	res := evaltest.Dataset(t, claim, prepare.Options{Dataset: "iris", Name: "iris", Seed: 42})
	uri := map[string]string{}
	for _, v := range []string{"v1", "v2", "v3"} {
		uri[v] = evaltest.TrainVersion(t, claim, res, "iris", v, "--objective", "multi:softprob", "--num-round", "5")
	}
	state := t.TempDir()
	b := &local.Backend{Runtime: testbin.Installed(t, "gangboost-runtime"), StateDir: state, StopTimeout: 5 * time.Second, SwitchGrace: time.Millisecond}
	// What the local runner does at the end of a run.
	t.Cleanup(func() { _, _ = localrun.StopProcesses(state, 5*time.Second) })
	ctx := context.Background()
	var log strings.Builder
	d := &deploy.Deployer{Backend: b, Log: &log}
	if _, err := d.Deploy(ctx, service(claim, "iris", uri["v1"])); err != nil {
		t.Fatal(err)
	}
	watch := promote.Watch{Window: 1500 * time.Millisecond, MaxErrorRate: 0.01}

	// v2 answers every request of its window with an error (the clients send it rows of the
	// wrong width, as they would a model trained on other columns).
	r2, err := d.Deploy(ctx, service(claim, "iris", uri["v2"]))
	if err != nil || r2.Challenger == nil {
		t.Fatalf("challenger v2: %+v, %v", r2, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		body := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if resp, err := http.Post(r2.URL+"/v2/models/iris/infer", "application/json", bytes.NewReader(body)); err == nil {
				resp.Body.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out strings.Builder
	res2, err := promote.Run(ctx, b, promote.Request{Service: service(claim, "iris", uri["v2"]), ChampionModelURI: r2.ChampionModelURI,
		Challenger: r2.Challenger.Name, Promote: true, Watch: watch, ChallengerURL: r2.URL}, &out)
	close(stop)
	wg.Wait()
	if err != nil || res2.Promoted || res2.ServingModelURI != uri["v1"] || !strings.Contains(res2.WatchFailed, "error rate above max_error_rate 0.01") {
		t.Fatalf("a failing challenger after its watch: %+v, %v\n%s", res2, err, out.String())
	}
	t.Logf("watch of the failing challenger: %s", res2.WatchFailed)
	if rec, err := local.ReadServing(service(claim, "iris", uri["v1"])); err != nil || rec.ModelURI != uri["v1"] {
		t.Errorf("serving record after the failed watch: %+v, %v", rec, err)
	}
	if _, err := local.ReadRecord(state, "iris.v2"); err == nil {
		t.Error("the watched-out challenger is still recorded")
	}

	// v3 gets no request in its window: nothing splits traffic here.
	r3, err := d.Deploy(ctx, service(claim, "iris", uri["v3"]))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	res3, err := promote.Run(ctx, b, promote.Request{Service: service(claim, "iris", uri["v3"]), ChampionModelURI: r3.ChampionModelURI,
		Challenger: r3.Challenger.Name, Promote: true, Watch: watch, ChallengerURL: r3.URL}, &out)
	if err != nil || !res3.Promoted || !strings.Contains(out.String(), "no request reached the challenger in 1.5s") {
		t.Fatalf("an unvisited challenger: %+v, %v\n%s", res3, err, out.String())
	}
}

func service(claim, name, uri string) *deploy.Service {
	s := &deploy.Service{Name: name, Namespace: "local", ModelURI: uri, MountPath: claim,
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "1", Memory: "1Gi",
		MinReplicas: 1, MaxReplicas: 1, Timeout: 2 * time.Minute, Promotion: deploy.PromotionChallenge}
	s.Claim, s.ModelPath, _ = deploy.ParseModelURI(uri)
	return s
}
