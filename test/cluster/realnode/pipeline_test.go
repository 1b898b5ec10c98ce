package realnode

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/pipelines"
	"github.com/gangboost/gangboost/test/cluster"
)

// TestPipelineOnRealNode runs the pipeline package as make demo-cluster does on a machine with a
// real node, and as KFP runs it: every step a pod on the real node, a container of the gangboost
// image as uid 65532 under the run's service account (its token mounted by the kubelet), the
// claim a PersistentVolume at its mount path, its ExecutorOutput and artifacts written to the
// pipeline root's folder (a hostPath volume at the same path), its log through pods/log;
// launch-xgboostjob's XGBoostJob then trains there as containers of the gangboost image,
// deploy-inferenceservice's predictor serves there as a container of the runtime image, and
// evaluate reaches it by its Service name through the cluster DNS and kube-proxy.
func TestPipelineOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost")
	importImage(t, c, "gangboost-runtime")
	applyServingRuntimes(t, c)
	ns := namespace(t, c, "realnode-pipeline")
	claim, claimDir := trainerClaim(t, c, ns, "pipeline")
	for _, rbac := range []string{"launch-xgboostjob.yaml", "deploy-inferenceservice.yaml", "pipeline-runner.yaml"} {
		c.ApplyRBAC(t, rbac, ns)
	}
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := repodir.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := localrun.ReadPackage(filepath.Join(root, "pipelines", "xgboost-volcano.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"workers": "2", "num_round": "20"}
	for k, v := range cluster.RealNodePipelineParams {
		params[k] = v
	}
	steps := &cluster.StepPods{C: c, Namespace: ns, ServiceAccount: "gangboost-pipeline-runner", RealNode: true}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out syncbuf.Buffer
	t0 := time.Now()
	res, err := localrun.Run(ctx, localrun.Options{
		Package: pkg, Backend: localrun.BackendKubernetes, Executor: steps,
		Claims: map[string]string{claim: claimDir}, Params: params,
		WorkDir: t.TempDir(), BinDir: bin, Out: &out,
	})
	took := time.Since(t0)
	if err != nil || res.State != localrun.StateSucceeded {
		t.Fatalf("pipeline run (%s): %v\n%s\ncomponent logs:\n%s", took.Round(time.Millisecond), err, out.String(), c.LogTails(30))
	}
	t.Logf("pipeline ran in %s", took.Round(time.Millisecond))

	stepPods := steps.Pods()
	if len(stepPods) != len(pipelines.Tasks) {
		t.Errorf("%d step pods, want one per task %v", len(stepPods), pipelines.Tasks)
	}
	image := version.Image("gangboost")
	for _, p := range stepPods {
		if p.Spec.NodeName != cluster.RealNodeName || p.Status.Phase != corev1.PodSucceeded || p.Spec.Containers[0].Image != image {
			t.Errorf("step pod %s: %s on %s, image %s; want Succeeded on the real node, image %s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.Containers[0].Image, image)
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID == "" {
			t.Errorf("step pod %s: container statuses %+v; want one container the kubelet ran", p.Name, p.Status.ContainerStatuses)
			continue
		}
		t.Logf("step %s ran on %s as %s", p.Labels[cluster.StepLabel], p.Spec.NodeName, p.Status.ContainerStatuses[0].ImageID)
	}
	bg := context.Background()
	// The gang was 3 pods placed together (launch's progress says so); of them, those the Training
	// Operator did not clean up when the job succeeded (cleanPodPolicy Running) say where they ran.
	for _, want := range []string{"minMember 3, queue ml-training", "gang placed: 3/3 pods bound", "job Succeeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run output lacks %q", want)
		}
	}
	gang, err := c.Kube.CoreV1().Pods(ns).List(bg, metav1.ListOptions{LabelSelector: kube.JobNameLabel})
	if err != nil || len(gang.Items) == 0 {
		t.Fatalf("trainer pods: %d (%v), want the Master at least", len(gang.Items), err)
	}
	checkGangPods(t, gang.Items)
	predictors, err := c.Kube.CoreV1().Pods(ns).List(bg, metav1.ListOptions{LabelSelector: kserveapi.PodLabel + "=iris"})
	if err != nil || len(predictors.Items) != 1 || predictors.Items[0].Spec.NodeName != cluster.RealNodeName {
		t.Errorf("predictor pods of iris: %+v (%v); want one on the real node", predictors.Items, err)
	}
	ev := res.Task("evaluate")
	if ev == nil {
		t.Fatal("no evaluate task in the result")
	}
	acc, ok := ev.Outputs["accuracy"].(float64)
	if !ok || acc < 0.9 {
		t.Errorf("served accuracy %v on the held-out rows, want >= 0.9", ev.Outputs["accuracy"])
	}
	if !regexp.MustCompile(`http://iris-run-[0-9a-f]{8}-predictor\.` + ns + `\.svc\.cluster\.local`).MatchString(out.String()) {
		t.Errorf("run output does not name the predictor's Service url:\n%s", out.String())
	}
	t.Logf("served accuracy %.3f", acc)

	// A second run of the package beside the first one's model, as KFP runs the next training:
	// deploy puts the new model beside the champion as a challenger, evaluate compares both, and
	// promote-model (policy always here, so that the promotion itself runs in its pod) makes it
	// the stable predictor, keeping the replaced one answering at its old address for the drain.
	first := res.Task("launch-xgboostjob").Outputs["model_uri"]
	params["num_round"], params["promote_policy"], params["promotion_drain_seconds"] = "10", "always", "2"
	steps2 := &cluster.StepPods{C: c, Namespace: ns, ServiceAccount: "gangboost-pipeline-runner", RealNode: true}
	var out2 syncbuf.Buffer
	t0 = time.Now()
	res2, err := localrun.Run(ctx, localrun.Options{
		Package: pkg, Backend: localrun.BackendKubernetes, Executor: steps2,
		Claims: map[string]string{claim: claimDir}, Params: params,
		WorkDir: t.TempDir(), BinDir: bin, Out: &out2,
	})
	if err != nil || res2.State != localrun.StateSucceeded {
		t.Fatalf("second pipeline run (%s): %v\n%s\ncomponent logs:\n%s", time.Since(t0).Round(time.Millisecond), err, out2.String(), c.LogTails(30))
	}
	t.Logf("second pipeline run in %s", time.Since(t0).Round(time.Millisecond))
	second := res2.Task("launch-xgboostjob").Outputs["model_uri"]
	promote := res2.Task("promote-model").Outputs
	if second == first || promote["promoted"] != "true" || promote["serving_model_uri"] != second || promote["previous_model_uri"] != first {
		t.Errorf("second run: model %v over %v, promote-model outputs %v; want the second promoted with the first recorded", second, first, promote)
	}
	for _, want := range []string{"beside it as challenger", "promoted challenger"} {
		if !strings.Contains(out2.String(), want) {
			t.Errorf("second run output lacks %q", want)
		}
	}
	var isvc kserveapi.InferenceService
	if err := c.Client.Get(bg, client.ObjectKey{Namespace: ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	if got := modelURIOf(isvc); got != second || len(isvc.Spec.Canary) != 0 || isvc.Status.Address == nil {
		t.Fatalf("after the second run the service serves %s with %d canaries (address %v); want %v alone", got, len(isvc.Spec.Canary), isvc.Status.Address, second)
	}
	version := strings.TrimPrefix(fmt.Sprint(second), "pvc://"+claim+"/")
	rows := irisRows
	got, want := inferWith(t, endpointHTTPClient(c), isvc.Status.Address.URL, "iris", rows, 4), libxgboostPredict(t, filepath.Join(claimDir, version, "model.json"), rows, 4)
	if !sameAnswers(got, want) {
		t.Fatalf("the promoted service answers %v; libxgboost on %s gives %v", got, second, want)
	}
}
