package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/internal/steps/promote"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestChampionChallengerOnRealNode: KServe v0.20's canary rollout with gangboost-runtime pods on
// the real node (each pod its own network, so champion and challenger really are two servers).
// v1 serves; v2 is deployed beside it as a challenger and rejected: the canary goes, the
// champion's pod is the same pod throughout. v3 is deployed beside it and promoted: the
// challenger's pod becomes the service's without a restart (same UID), the champion's goes, the
// service answers as v3's file predicts (libxgboost), and v1 is recorded for a rollback. A
// promotion compared with a champion that no longer serves is refused and its challenger removed.
func TestChampionChallengerOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost-runtime")
	applyServingRuntimes(t, c)
	ns := namespace(t, c, "realnode-promote")
	claim, claimDir := trainerClaim(t, c, ns, "promote")
	for v, rounds := range map[string]int{"v1": 20, "v2": 2, "v3": 8} {
		dir := filepath.Join(claimDir, "models", "iris", v)
		if out, err := exec.Command(testbin.Installed(t, "gangboost-train"), "--dataset", "iris", "--objective", "multi:softprob",
			"--num-round", fmt.Sprint(rounds), "--nthread", "1", "--model-dir", dir).CombinedOutput(); err != nil {
			t.Fatalf("train %s: %v\n%s", v, err, out)
		}
	}
	want := func(v string) []float32 {
		return libxgboostPredict(t, filepath.Join(claimDir, "models", "iris", v, "model.json"), irisRows, 4)
	}
	backend, err := deploykube.New(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := endpointHTTPClient(c)
	backend.HTTPClient = hc
	// Long enough for the client below, which reads the address before every call, to move, even
	// when a busy machine holds it seconds between its read and its call.
	backend.PromotionDrain = 8 * time.Second
	service := func(v string) *deploy.Service {
		return &deploy.Service{
			Name: "iris", Namespace: ns, ModelURI: "pvc://" + claim + "/models/iris/" + v, Claim: claim, ModelPath: "models/iris/" + v,
			Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "200m", Memory: "256Mi", MinReplicas: 1, MaxReplicas: 1,
			Timeout: 3 * time.Minute, RunID: "run-" + v, DeploymentMode: "RawDeployment", FSGroup: ptr.To(int64(65532)),
			Promotion: deploy.PromotionChallenge,
		}
	}
	t.Cleanup(func() {
		isvc := &kserveapi.InferenceService{}
		isvc.Name, isvc.Namespace = "iris", ns
		_ = c.Client.Delete(context.Background(), isvc, client.PropagationPolicy(metav1.DeletePropagationForeground))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := &deploy.Deployer{Backend: backend, Log: testLog{t}}
	check := func(what, url string, v string) {
		t.Helper()
		got, w := inferWith(t, hc, url, "iris", irisRows, 4), want(v)
		if !sameAnswers(got, w) {
			t.Fatalf("%s at %s answers %v; libxgboost on %s gives %v", what, url, got, v, w)
		}
	}
	podsOf := func(v string) []corev1.Pod {
		t.Helper()
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kserveapi.PodLabel: "iris"}); err != nil {
			t.Fatal(err)
		}
		var out []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Annotations[deploykube.ModelURIAnnotation] == "pvc://"+claim+"/models/iris/"+v {
				out = append(out, p)
			}
		}
		return out
	}
	uids := func(pods []corev1.Pod) string {
		var s []string
		for _, p := range pods {
			s = append(s, string(p.UID))
		}
		return strings.Join(s, ",")
	}

	first, err := d.Deploy(ctx, service("v1"))
	if err != nil || first.Challenger != nil {
		t.Fatalf("first deploy: %+v, %v", first, err)
	}
	check("the first model", first.URL, "v1")
	champion := uids(podsOf("v1"))

	// v2 beside v1, rejected.
	r2, err := d.Deploy(ctx, service("v2"))
	if err != nil || r2.Challenger == nil || r2.ChampionModelURI != "pvc://"+claim+"/models/iris/v1" {
		t.Fatalf("challenger v2: %+v, %v", r2, err)
	}
	check("the challenger v2", r2.URL, "v2")
	check("the champion beside it", r2.Champion.URL, "v1")
	t0 := time.Now()
	res, err := promote.Run(ctx, backend, promote.Request{Service: service("v2"), ChampionModelURI: r2.ChampionModelURI, Challenger: r2.Challenger.Name,
		Reason: "v2 rejected (test)"}, testLog{t})
	if err != nil || res.Promoted || res.ServingModelURI != r2.ChampionModelURI {
		t.Fatalf("reject: %+v, %v", res, err)
	}
	t.Logf("rejected in %s", time.Since(t0).Round(time.Millisecond))
	cluster.WaitFor(t, 90*time.Second, "the rejected challenger's Deployment is removed", func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris-" + r2.Challenger.Name + "-predictor"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), nil
	})
	if now := uids(podsOf("v1")); now != champion {
		t.Errorf("the champion's pods changed during the rejection: %s, were %s", now, champion)
	}

	// v3 beside v1, promoted while a client keeps calling the service's address.
	r3, err := d.Deploy(ctx, service("v3"))
	if err != nil || r3.Challenger == nil {
		t.Fatalf("challenger v3: %+v, %v", r3, err)
	}
	challenger := uids(podsOf("v3"))
	var calls, failed atomic.Int64
	var lastErr atomic.Value
	var addressesMu sync.Mutex
	addresses := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var isvc kserveapi.InferenceService
			if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil || isvc.Status.Address == nil {
				continue
			}
			calls.Add(1)
			addressesMu.Lock()
			addresses[isvc.Status.Address.URL]++
			addressesMu.Unlock()
			resp, err := hc.Get(isvc.Status.Address.URL + "/v2/models/iris/ready")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = errors.New(resp.Status)
				}
			}
			if err != nil {
				failed.Add(1)
				lastErr.Store(err.Error())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t0 = time.Now()
	res, err = promote.Run(ctx, backend, promote.Request{Service: service("v3"), ChampionModelURI: r3.ChampionModelURI, Challenger: r3.Challenger.Name,
		Promote: true, Reason: "v3 promoted (test)"}, testLog{t})
	took := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil || !res.Promoted || res.PreviousModelURI != "pvc://"+claim+"/models/iris/v1" {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	t.Logf("promoted in %s; a client calling the service's address: %d calls, %d failed (last: %v), by address %v", took.Round(time.Millisecond), calls.Load(), failed.Load(), lastErr.Load(), addresses)
	if failed.Load() != 0 || len(addresses) != 2 {
		t.Errorf("during the promotion a client reading the service's address before each call saw %d of %d calls fail (last: %v) across addresses %v; want none failed, and the address moved once",
			failed.Load(), calls.Load(), lastErr.Load(), addresses)
	}
	var isvc kserveapi.InferenceService
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	if isvc.Spec.Predictor.Name != r3.Challenger.Name || len(isvc.Spec.Canary) != 0 ||
		isvc.Spec.Predictor.Annotations[deploykube.PreviousModelURIAnnotation] != "pvc://"+claim+"/models/iris/v1" {
		t.Errorf("after the promotion: predictor %q, canaries %d, annotations %v", isvc.Spec.Predictor.Name, len(isvc.Spec.Canary), isvc.Spec.Predictor.Annotations)
	}
	if now := uids(podsOf("v3")); now != challenger {
		t.Errorf("the promoted challenger's pods were restarted: %s, were %s", now, challenger)
	}
	cluster.WaitFor(t, 90*time.Second, "the old champion's pods are gone", func(context.Context) (bool, error) { return len(podsOf("v1")) == 0, nil })
	check("the service after the promotion", isvc.Status.Address.URL, "v3")

	// A challenger compared with v1, which no longer serves: refused, and removed.
	r4, err := d.Deploy(ctx, service("v2"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = promote.Run(ctx, backend, promote.Request{Service: service("v2"), ChampionModelURI: "pvc://" + claim + "/models/iris/v1",
		Challenger: r4.Challenger.Name, Promote: true}, testLog{t})
	var changed *deploy.ChampionChangedError
	if !errors.As(err, &changed) || changed.Serving != "pvc://"+claim+"/models/iris/v3" {
		t.Fatalf("a promotion over a replaced champion: %v", err)
	}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil || len(isvc.Spec.Canary) != 0 || modelURIOf(isvc) != "pvc://"+claim+"/models/iris/v3" {
		t.Errorf("after the refused promotion: canaries %d, model %s (%v)", len(isvc.Spec.Canary), modelURIOf(isvc), err)
	}

	// Two runs promote into the service at once (challengers v1 and v2, both compared with
	// v3): exactly one wins, the other is refused and its challenger removed; no update is lost.
	rA, err := d.Deploy(ctx, service("v1"))
	if err != nil {
		t.Fatal(err)
	}
	rB, err := d.Deploy(ctx, service("v2"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	var race sync.WaitGroup
	for i, r := range []struct {
		v string
		r *deploy.Result
	}{{"v1", rA}, {"v2", rB}} {
		race.Add(1)
		go func() {
			defer race.Done()
			_, errs[i] = promote.Run(ctx, backend, promote.Request{Service: service(r.v), ChampionModelURI: r.r.ChampionModelURI,
				Challenger: r.r.Challenger.Name, Promote: true}, testLog{t})
		}()
	}
	race.Wait()
	winner := ""
	for i, v := range []string{"v1", "v2"} {
		switch {
		case errs[i] == nil && winner == "":
			winner = v
		case errs[i] == nil:
			t.Fatalf("both concurrent promotions succeeded")
		case !errors.As(errs[i], &changed):
			t.Fatalf("the losing promotion of %s: %v, want a ChampionChangedError", v, errs[i])
		}
	}
	if winner == "" {
		t.Fatalf("no concurrent promotion succeeded: %v", errs)
	}
	t.Logf("concurrent promotions: %s won; the other: %v", winner, errs)
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil || len(isvc.Spec.Canary) != 0 ||
		modelURIOf(isvc) != "pvc://"+claim+"/models/iris/"+winner {
		t.Fatalf("after the concurrent promotions: canaries %d, model %s (%v); want %s alone", len(isvc.Spec.Canary), modelURIOf(isvc), err, winner)
	}

	// gangboost rollback: v3, which the winner replaced, serves again, through the same canary
	// promotion.
	t0 = time.Now()
	ep, model, err := backend.Rollback(ctx, ns, "iris", func(line string) { t.Log(line) })
	if err != nil || model != "pvc://"+claim+"/models/iris/v3" {
		t.Fatalf("rollback: %s, %v", model, err)
	}
	t.Logf("rolled back in %s to %s", time.Since(t0).Round(time.Millisecond), ep.URL)
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	if got := isvc.Spec.Predictor.Annotations[deploykube.PreviousModelURIAnnotation]; got != "pvc://"+claim+"/models/iris/"+winner {
		t.Errorf("after the rollback the previous model is %q, want %s", got, winner)
	}
	check("the service after the rollback", isvc.Status.Address.URL, "v3")

	// A challenger whose model cannot load: its runtime crash-loops with the reason, the
	// challenger is removed and deploy fails with that reason; the champion's pod serves on.
	broken := filepath.Join(claimDir, "models", "iris", "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "model.json"), []byte(`{"learner": `), 0o644); err != nil {
		t.Fatal(err)
	}
	// The rollback's promotion removes the pods it replaced: the champion is its one pod then.
	cluster.WaitFor(t, 90*time.Second, "one pod serves v3", func(context.Context) (bool, error) { return len(podsOf("v3")) == 1, nil })
	before := uids(podsOf("v3"))
	t0 = time.Now()
	_, err = d.Deploy(ctx, service("broken"))
	if err == nil || !strings.Contains(err.Error(), "model.json") || !strings.Contains(err.Error(), "challenger broken removed") {
		t.Fatalf("a challenger that cannot load: %v; want its runtime's failure naming the file, and its removal", err)
	}
	t.Logf("the broken challenger failed the deploy after %s: %v", time.Since(t0).Round(time.Millisecond), err)
	var afterBroken kserveapi.InferenceService
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &afterBroken); err != nil || len(afterBroken.Spec.Canary) != 0 {
		t.Errorf("canaries after the broken challenger: %v (%v)", afterBroken.Spec.Canary, err)
	}
	if now := uids(podsOf("v3")); now != before {
		t.Errorf("the champion's pods changed during the broken challenger: %s, were %s", now, before)
	}
	check("the champion after the broken challenger", afterBroken.Status.Address.URL, "v3")

	// Without the CLI: README's kubectl lines (read from README, the namespace swapped) roll the
	// service out to the previous model, the winner the rollback replaced.
	script := readmeRollbackPatch(t, ns)
	t0 = time.Now()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README's rollback patch: %v\n%s", err, out)
	}
	wantWinner := want(winner)
	cluster.WaitFor(t, 2*time.Minute, "the service answers as "+winner+" after README's patch", func(ctx context.Context) (bool, error) {
		var isvc kserveapi.InferenceService
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iris"}, &isvc); err != nil || !isvc.Status.IsReady() || isvc.Status.Address == nil {
			return false, nil
		}
		got, err := tryInfer(hc, isvc.Status.Address.URL, "iris", irisRows, 4)
		return err == nil && sameAnswers(got, wantWinner) && modelURIOf(isvc) == "pvc://"+claim+"/models/iris/"+winner, nil
	})
	t.Logf("README's kubectl rollback: the service answered as %s %s after the patch", winner, time.Since(t0).Round(time.Millisecond))
}

// readmeRollbackPatch is README's kubectl rollback (the sh block that reads the previous model
// and patches the InferenceService), for namespace ns instead of the example's team-a.
func readmeRollbackPatch(t *testing.T, ns string) string {
	t.Helper()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```sh\nprev=$(kubectl get isvc iris -n team-a"
	i := strings.Index(string(b), start)
	if i < 0 {
		t.Fatalf("README has no block starting %q", start)
	}
	block := string(b[i+len("```sh\n"):])
	block = block[:strings.Index(block, "```")]
	if !strings.Contains(block, "kubectl patch isvc iris -n team-a") {
		t.Fatalf("README's rollback block has no kubectl patch:\n%s", block)
	}
	return strings.ReplaceAll(block, "-n team-a", "-n "+ns)
}

func modelURIOf(isvc kserveapi.InferenceService) string {
	if m := isvc.Spec.Predictor.Model; m != nil && m.StorageURI != nil {
		return *m.StorageURI
	}
	return ""
}
