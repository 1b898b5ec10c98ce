package local

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestLocalChampionChallenger: v1 serves (the claim's serving record says so); a run with v2
// deploys it beside v1 as a challenger, and a later run (new state: the first run's processes
// are gone) starts the champion again beside its challenger. Promotion keeps the challenger's
// process (same pid) under the service's name, stops the champion's and records v1 as the
// previous model; a rejection stops only the challenger; a promotion whose champion changed
// meanwhile removes its challenger and says which model serves.
func TestLocalChampionChallenger(t *testing.T) {
	claim := t.TempDir()
	train(t, claim, "v1", 20)
	train(t, claim, "v2", 3)
	train(t, claim, "v3", 8)
	uri := func(v string) string { return "pvc://gangboost-models/models/iris/" + v }
	runtime := testbin.Installed(t, "gangboost-runtime")
	hc := &http.Client{Timeout: 5 * time.Second}
	newRun := func() (*Backend, string) {
		state := t.TempDir()
		t.Cleanup(func() {
			for _, name := range []string{"iris", "iris.v2", "iris.v3"} {
				stopRecorded(t, state, name)
			}
		})
		return &Backend{Runtime: runtime, StateDir: state, StopTimeout: 5 * time.Second, SwitchGrace: time.Millisecond}, state
	}
	ctx := context.Background()
	var log strings.Builder
	d := func(b *Backend) *deploy.Deployer { return &deploy.Deployer{Backend: b, Log: &log} }

	// Run 1: no champion, v1 becomes the service's model.
	b1, _ := newRun()
	s1 := service(claim, "iris", uri("v1"))
	s1.Promotion = deploy.PromotionChallenge
	r1, err := d(b1).Deploy(ctx, s1)
	if err != nil || r1.Challenger != nil {
		t.Fatalf("first deploy: %+v, %v\n%s", r1, err, log.String())
	}
	want1, err := infer(hc, r1.URL, "iris")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadServing(s1); err != nil || rec.ModelURI != uri("v1") || rec.PreviousModelURI != "" {
		t.Fatalf("serving record after the first deploy: %+v, %v", rec, err)
	}

	// Run 2, in a new state folder: v2 beside v1, whose process run 2 starts again.
	b2, state2 := newRun()
	s2 := service(claim, "iris", uri("v2"))
	s2.Promotion, s2.RuntimeArgs = deploy.PromotionChallenge, []string{"--enable_batching=true"}
	r2, err := d(b2).Deploy(ctx, s2)
	if err != nil || r2.Challenger == nil || r2.Challenger.Name != "v2" || r2.ChampionModelURI != uri("v1") || r2.Champion == nil {
		t.Fatalf("challenger deploy: %+v, %v\n%s", r2, err, log.String())
	}
	if got, err := infer(hc, r2.Champion.URL, "iris"); err != nil || !same(got, want1) {
		t.Fatalf("the champion's endpoint answers %v, %v; want v1's %v", got, err, want1)
	}
	want2, err := infer(hc, r2.URL, "iris")
	if err != nil || same(want2, want1) {
		t.Fatalf("the challenger's endpoint answers %v, %v; want v2's own answers", want2, err)
	}
	serving, err := b2.Serving(ctx, s2)
	if err != nil || serving.ModelURI != uri("v1") || len(serving.Challengers) != 1 || serving.Challengers[0] != "v2" {
		t.Fatalf("Serving = %+v, %v", serving, err)
	}
	champion, _ := ReadRecord(state2, "iris")
	challenger, _ := ReadRecord(state2, "iris.v2")
	// Each runs with its own runtime flags: v1 was deployed without, v2 with batching on.
	if b, err := batching(hc, r2.Champion.URL); err != nil || b != "false" {
		t.Errorf("the champion restarted by run 2 batches %q (%v); want false: its own flags, not run 2's", b, err)
	}
	if b, err := batching(hc, r2.URL); err != nil || b != "true" {
		t.Errorf("the challenger batches %q (%v); want true: run 2's runtime_args", b, err)
	}

	// Promote, as the promote step does (its service carries no runtime flags): the challenger's
	// process serves on under the service's name.
	promote := *s2
	promote.RuntimeArgs = nil
	if err := b2.Promote(ctx, &promote, *r2.Challenger); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecord(state2, "iris")
	if err != nil || rec.PID != challenger.PID || rec.ModelURI != uri("v2") {
		t.Fatalf("after promotion the service's record is %+v (%v); want the challenger's process %d", rec, err, challenger.PID)
	}
	if procgroup.Alive(champion.PID) {
		t.Errorf("the champion's process %d still runs after the promotion", champion.PID)
	}
	if got, err := infer(hc, rec.URL, "iris"); err != nil || !same(got, want2) {
		t.Errorf("after promotion the service answers %v, %v; want v2's", got, err)
	}
	if sr, err := ReadServing(s2); err != nil || sr.ModelURI != uri("v2") || sr.PreviousModelURI != uri("v1") {
		t.Errorf("serving record after promotion: %+v, %v", sr, err)
	}

	// Run 3: v3 beside v2, rejected: v2's process is untouched.
	b3, state3 := newRun()
	s3 := service(claim, "iris", uri("v3"))
	s3.Promotion, s3.ChallengerTraffic = deploy.PromotionChallenge, 10
	r3, err := d(b3).Deploy(ctx, s3)
	if err != nil || r3.ChampionModelURI != uri("v2") {
		t.Fatalf("third deploy: %+v, %v", r3, err)
	}
	// Nothing splits local traffic: the step says so and the comparison is dark.
	if r3.Challenger.TrafficPercent != 0 || !strings.Contains(log.String(), "challenger_traffic_percent 10 asked, but local runtimes each answer at their own address") {
		t.Errorf("a traffic share asked of the local backend: challenger %+v, log:\n%s", r3.Challenger, log.String())
	}
	champion3, _ := ReadRecord(state3, "iris")
	challenger3, _ := ReadRecord(state3, "iris.v3")
	if b, err := batching(hc, r3.Champion.URL); err != nil || b != "true" {
		t.Errorf("v2, restarted as champion by run 3, batches %q (%v); want true: the flags it was deployed and promoted with", b, err)
	}
	if err := b3.Reject(ctx, s3, *r3.Challenger); err != nil {
		t.Fatal(err)
	}
	if procgroup.Alive(challenger3.PID) || !procgroup.Alive(champion3.PID) {
		t.Errorf("after the rejection: challenger alive %v, champion alive %v; want only the champion", procgroup.Alive(challenger3.PID), procgroup.Alive(champion3.PID))
	}
	if sr, _ := ReadServing(s3); sr.ModelURI != uri("v2") {
		t.Errorf("a rejection changed the serving record: %+v", sr)
	}

	// A challenger whose model cannot load: deploy fails naming the file, nothing of it is left,
	// and the champion's process serves on.
	broken := filepath.Join(claim, "models", "iris", "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "model.json"), []byte(`{"learner": `), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := service(claim, "iris", uri("broken"))
	sb.Promotion = deploy.PromotionChallenge
	if _, err := d(b3).Deploy(ctx, sb); err == nil || !strings.Contains(err.Error(), filepath.Join(broken, "model.json")) {
		t.Errorf("a challenger that cannot load: %v; want a failure naming %s", err, filepath.Join(broken, "model.json"))
	}
	if _, err := ReadRecord(state3, "iris.broken"); err == nil {
		t.Error("the broken challenger left a record")
	}
	if rec, err := ReadRecord(state3, "iris"); err != nil || rec.PID != champion3.PID || !procgroup.Alive(champion3.PID) {
		t.Errorf("the champion after a broken challenger: %+v, %v; want pid %d serving on", rec, err, champion3.PID)
	}
	if got, err := infer(hc, champion3.URL, "iris"); err != nil || !same(got, want2) {
		t.Errorf("the champion answers %v, %v after a broken challenger; want v2's", got, err)
	}

	// Run 4 compared v3 with v1, but v2 serves now: its promotion is refused, its challenger removed.
	r4, err := d(b3).Deploy(ctx, s3)
	if err != nil {
		t.Fatal(err)
	}
	stale := *r4.Challenger
	stale.Champion = uri("v1")
	err = b3.Promote(ctx, s3, stale)
	var changed *deploy.ChampionChangedError
	if !errors.As(err, &changed) || changed.Serving != uri("v2") || !strings.Contains(err.Error(), "run again to compare with "+uri("v2")) {
		t.Fatalf("a promotion over a replaced champion: %v", err)
	}
	if _, err := ReadRecord(state3, "iris.v3"); err == nil {
		t.Error("the refused challenger's record is still there")
	}
}

// batching is the "batching" parameter of the iris model's metadata at base.
func batching(hc *http.Client, base string) (string, error) {
	resp, err := hc.Get(base + "/v2/models/iris")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var md struct {
		Parameters map[string]string `json:"parameters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil {
		return "", err
	}
	return md.Parameters["batching"], nil
}
