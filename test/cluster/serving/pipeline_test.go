package serving

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/pipelines"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

// pipelineRunner is the service account of manifests/rbac/pipeline-runner.yaml, which KFP would
// run every step of the run as.
const pipelineRunner = "gangboost-pipeline-runner"

// TestPipelineOnCluster runs the committed pipeline package with every step a pod on the control
// plane, as KFP runs it: the executor's command with its placeholders resolved, the pvcMount's
// claim at its mount path, under the run's service account from manifests/rbac (the components
// find its token where rest.InClusterConfig looks, so they have only what its Roles grant).
// launch-xgboostjob's XGBoostJob is gang-scheduled by Volcano and trained in pods,
// deploy-inferenceservice's InferenceService is rolled out by KServe's controller, and evaluate
// calls the predictor by its Service name (status.address.url).
func TestPipelineOnCluster(t *testing.T) {
	e := newDeployEnv(t)
	e.c.ApplyRBAC(t, "launch-xgboostjob.yaml", e.ns)
	e.c.ApplyRBAC(t, "pipeline-runner.yaml", e.ns)
	checkPackageRun(t, e, pipelineRunner, nil)
}

// removeRunObjects removes what a run leaves in e's namespace at the end of the test: the finished
// job's pods stay (cleanPodPolicy Running) and the namespace's cleanup waits for every pod to be
// gone, so the job and its pods go first (cleanups run last-in first-out).
func removeRunObjects(t *testing.T, e *deployEnv) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.c.Client.DeleteAllOf(ctx, &kubeflowv1.XGBoostJob{}, client.InNamespace(e.ns), client.PropagationPolicy(metav1.DeletePropagationBackground))
		_ = e.c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.ns), client.HasLabels{"training.kubeflow.org/job-name"})
		_ = e.c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.ns), client.HasLabels{cluster.StepLabel})
	})
}

// runPackage runs the committed pipeline package in e's namespace with every step a pod under
// serviceAccount, with params over the tests' own (2 workers, 20 rounds).
func runPackage(t *testing.T, e *deployEnv, serviceAccount string, params map[string]string) (*localrun.Package, *localrun.Result, *cluster.StepPods, string, error) {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := localrun.ReadPackage(filepath.Join(root, "pipelines", "xgboost-volcano.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pods := &cluster.StepPods{C: e.c, Namespace: e.ns, ServiceAccount: serviceAccount}
	var out syncbuf.Buffer
	start := time.Now()
	p := map[string]string{"workers": "2", "num_round": "20"}
	maps.Copy(p, params)
	res, err := localrun.Run(ctx, localrun.Options{
		Package: pkg, Backend: localrun.BackendKubernetes, Executor: pods,
		Claims:  map[string]string{claim: e.pvcDir},
		Params:  p,
		WorkDir: t.TempDir(), BinDir: testbin.Dir(t), Out: &out,
	})
	t.Logf("pipeline ran in %s", time.Since(start).Round(time.Millisecond))
	return pkg, res, pods, out.String(), err
}

// checkPackageRun runs the package as serviceAccount in e's namespace (the steps' default: no
// namespace parameter) with params and checks each step's pod and what the steps left on the
// cluster; it returns the run's output.
func checkPackageRun(t *testing.T, e *deployEnv, serviceAccount string, params map[string]string) string {
	t.Helper()
	removeRunObjects(t, e)
	ctx := context.Background()
	pkg, res, pods, output, err := runPackage(t, e, serviceAccount, params)
	if err != nil {
		t.Fatalf("pipeline run: %v\n%s\ncomponent logs:\n%s", err, output, e.c.LogTails(30))
	}
	for _, want := range []string{
		"PodGroup", "minMember 3, queue ml-training", "gang placed: 3/3 pods bound", "job Succeeded",
		"iris ready after", "-predictor." + e.ns + ".svc.cluster.local",
		"compare with the trainer",
	} {
		if !strings.Contains(output, want) {
			t.Errorf("run output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", output)
	}

	// Each step ran as its pod: the run's service account with its token mounted, the
	// executor's command with {{$}} resolved to the step's ExecutorInput, exit 0.
	ran := pods.Pods()
	if len(ran) != len(pipelines.Tasks) {
		t.Fatalf("%d step pods, want %d (%v)", len(ran), len(pipelines.Tasks), pipelines.Tasks)
	}
	for i, pod := range ran {
		task := res.Tasks[i]
		exec := pkg.Executors[pkg.Spec.GetComponents()[pkg.Spec.GetRoot().GetDag().GetTasks()[task.Name].GetComponentRef().GetName()].GetExecutorLabel()].GetContainer()
		c := pod.Spec.Containers[0]
		if pod.Labels[cluster.StepLabel] != task.Name || pod.Spec.ServiceAccountName != serviceAccount || c.Image != exec.GetImage() {
			t.Errorf("pod %s: task %q, service account %q, image %q; want %s, %s, %s",
				pod.Name, pod.Labels[cluster.StepLabel], pod.Spec.ServiceAccountName, c.Image, task.Name, serviceAccount, exec.GetImage())
		}
		if !tokenMounted(pod) {
			t.Errorf("pod %s: no service-account token volume at /var/run/secrets/kubernetes.io/serviceaccount", pod.Name)
		}
		want := exec.GetCommand()
		if len(c.Command) != len(want) {
			t.Errorf("pod %s: command %q, want the executor's %q resolved", pod.Name, c.Command, want)
			continue
		}
		for j, arg := range want {
			switch {
			case arg == "{{$}}":
				if _, err := kfp.ParseExecutorInput([]byte(c.Command[j])); err != nil {
					t.Errorf("pod %s: {{$}} resolved to no ExecutorInput: %v", pod.Name, err)
				}
			case c.Command[j] != arg:
				t.Errorf("pod %s: command[%d] %q, want %q", pod.Name, j, c.Command[j], arg)
			}
		}
		if st := pod.Status.ContainerStatuses; pod.Status.Phase != corev1.PodSucceeded || len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
			t.Errorf("pod %s: phase %s, statuses %+v; want Succeeded, exit 0", pod.Name, pod.Status.Phase, st)
		}
	}

	// What the steps left on the cluster: the finished job, a Ready InferenceService on its model.
	var jobs kubeflowv1.XGBoostJobList
	if err := e.c.Client.List(ctx, &jobs, client.InNamespace(e.ns)); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("XGBoostJobs in %s: %d (%v), want 1", e.ns, len(jobs.Items), err)
	}
	if !hasCondition(jobs.Items[0].Status.Conditions, kubeflowv1.JobSucceeded) {
		t.Errorf("job %s conditions %+v, want Succeeded", jobs.Items[0].Name, jobs.Items[0].Status.Conditions)
	}
	var isvc kserveapi.InferenceService
	if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
		t.Fatal(err)
	}
	// The run's own version (model_version left empty: run-<run id>), which the service serves.
	versions, _ := filepath.Glob(filepath.Join(e.pvcDir, "models", "iris", "run-*"))
	if len(versions) != 1 {
		t.Fatalf("model versions on the claim: %v, want the run's one", versions)
	}
	if _, err := os.Stat(filepath.Join(versions[0], "model.json")); err != nil {
		t.Errorf("model on the claim: %v", err)
	}
	if want := "pvc://" + claim + "/models/iris/" + filepath.Base(versions[0]); !isvc.Status.IsReady() || isvc.Spec.Predictor.Model.StorageURI == nil || *isvc.Spec.Predictor.Model.StorageURI != want {
		t.Errorf("InferenceService iris: ready %v, storageUri %v, want %s", isvc.Status.IsReady(), isvc.Spec.Predictor.Model.StorageURI, want)
	}

	// The run's outputs, read back from each step's ExecutorOutput: the served accuracy on the
	// held-out Iris rows.
	if res.State != localrun.StateSucceeded || len(res.Tasks) != len(pipelines.Tasks) {
		t.Errorf("run: state %s, %d tasks; want SUCCEEDED, %d", res.State, len(res.Tasks), len(pipelines.Tasks))
	}
	if ev := res.Task("evaluate"); ev == nil {
		t.Error("no evaluate task in the result")
	} else if acc, ok := ev.Outputs["accuracy"].(float64); !ok || acc < 0.9 {
		var text bytes.Buffer
		localrun.WriteText(&text, res)
		t.Errorf("served accuracy %v on the held-out rows, want >= 0.9:\n%s", ev.Outputs["accuracy"], text.String())
	}
	return output
}

// tokenMounted reports whether the pod mounts a projected service-account token (the
// ServiceAccount admission plugin's kube-api-access volume) where rest.InClusterConfig reads it.
func tokenMounted(pod *corev1.Pod) bool {
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ServiceAccountToken != nil {
						return true
					}
				}
			}
		}
	}
	return false
}

func hasCondition(conds []kubeflowv1.JobCondition, want kubeflowv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == want && c.Status == "True" {
			return true
		}
	}
	return false
}
