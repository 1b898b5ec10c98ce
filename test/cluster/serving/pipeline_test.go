package serving

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/test/cluster"
)

// TestPipelineOnCluster runs the committed pipeline package as make demo-cluster does: every step
// a local process with the cluster's kubeconfig (the local runner's kubernetes backend), so
// launch-xgboostjob's XGBoostJob is gang-scheduled by Volcano and trained in pods,
// deploy-inferenceservice's InferenceService is rolled out by KServe's controller, and evaluate
// calls the predictor by its Service name (status.address.url) through the Service proxy.
func TestPipelineOnCluster(t *testing.T) {
	e := newDeployEnv(t)
	// The finished job's pods stay (cleanPodPolicy Running); the namespace's cleanup waits for
	// every pod to be gone, so the job and its pods go first (cleanups run last-in first-out).
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.c.Client.DeleteAllOf(ctx, &kubeflowv1.XGBoostJob{}, client.InNamespace(e.ns), client.PropagationPolicy(metav1.DeletePropagationBackground))
		_ = e.c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.ns), client.HasLabels{"training.kubeflow.org/job-name"})
	})
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	proxy, err := cluster.ServiceProxy(ctx, e.c.Kube)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.BinDir(), "gangboost"), "pipeline", "run",
		"--local", filepath.Join(root, "pipelines", "xgboost-volcano.yaml"), "--backend", "kubernetes",
		"--workdir", work, "--claim-dir", claim+"="+e.pvcDir, "--bin-dir", cluster.BinDir(),
		"--param", "namespace="+e.ns, "--param", "workers=2", "--param", "num_round=20")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.c.Kubeconfig, "HTTP_PROXY=http://"+proxy, "NO_PROXY=127.0.0.1,localhost")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("pipeline ran in %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("gangboost pipeline run --backend kubernetes: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"PodGroup", "minMember 3, queue ml-training", "gang placed: 3/3 pods bound", "job Succeeded",
		"iris ready after", "http://iris-predictor." + e.ns + ".svc.cluster.local",
		"compare with the trainer", "gangboost demo: SUCCEEDED",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out.String())
	}

	// What the steps left on the cluster: the finished job, a Ready InferenceService on its model.
	var jobs kubeflowv1.XGBoostJobList
	if err := e.c.Client.List(ctx, &jobs, client.InNamespace(e.ns)); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("XGBoostJobs in %s: %d (%v), want 1", e.ns, len(jobs.Items), err)
	}
	if !hasCondition(jobs.Items[0].Status.Conditions, kubeflowv1.JobSucceeded) {
		t.Errorf("job %s conditions %+v, want Succeeded", jobs.Items[0].Name, jobs.Items[0].Status.Conditions)
	}
	var isvc v1beta1.InferenceService
	if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	if !isvc.Status.IsReady() || isvc.Spec.Predictor.Model.StorageURI == nil || *isvc.Spec.Predictor.Model.StorageURI != "pvc://"+claim+"/models/iris/v1" {
		t.Errorf("InferenceService iris: ready %v, storageUri %v", isvc.Status.IsReady(), isvc.Spec.Predictor.Model.StorageURI)
	}

	// The run's summary: the served accuracy on the held-out Iris rows.
	matches, _ := filepath.Glob(filepath.Join(work, "pipeline-root", "xgboost-volcano", "*", "summary.json"))
	if len(matches) != 1 {
		t.Fatalf("summary files %v, want one", matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		State string `json:"state"`
		Tasks []struct {
			Name    string         `json:"name"`
			Outputs map[string]any `json:"outputs"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if summary.State != "SUCCEEDED" || len(summary.Tasks) != 4 {
		t.Errorf("summary: state %s, %d tasks; want SUCCEEDED, 4", summary.State, len(summary.Tasks))
	}
	if !strings.Contains(out.String(), "accuracy   0.9") && !strings.Contains(out.String(), "accuracy   1") {
		t.Errorf("accuracy below 0.9 on the held-out rows:\n%s", out.String())
	}
}

func hasCondition(conds []kubeflowv1.JobCondition, want kubeflowv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == want && c.Status == "True" {
			return true
		}
	}
	return false
}
