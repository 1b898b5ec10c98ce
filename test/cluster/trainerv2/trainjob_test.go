package trainerv2

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

const (
	claimName    = "gangboost-data"
	pvcMountPath = "/mnt/pvc"
	// mlQueue is operator-config/volcano's queue.
	mlQueue = "ml-training"
	// trainerImage stands for gangboost's trainer image; the pod runner runs
	// its command, gangboost-train, from bin/.
	trainerImage = "gangboost-trainer:e2e"
	numNodes     = 3
)

// clusterTrainingRuntime is an XGBoost runtime as gangboost ships one:
// Trainer v2's XGBoost ML policy (DMLC_* env, rank 0 runs the tracker) over
// gangboost-train with the claim at /mnt/pvc, gang scheduled by Volcano.
func clusterTrainingRuntime(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "ClusterTrainingRuntime",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]any{"trainer.kubeflow.org/framework": "xgboost"},
		},
		"spec": map[string]any{
			"mlPolicy":       map[string]any{"numNodes": int64(numNodes), "xgboost": map[string]any{}},
			"podGroupPolicy": map[string]any{"volcano": map[string]any{}},
			// Trainer v2 reads the Volcano queue from the JobSet template's
			// annotations (a TrainJob changes it through its runtime patches).
			"template": map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{schedulingv1beta1.QueueNameAnnotationKey: mlQueue}},
				"spec": map[string]any{
					"replicatedJobs": []any{map[string]any{
						"name": "node",
						"template": map[string]any{
							"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
							"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
								"schedulerName": "volcano",
								"containers": []any{map[string]any{
									"name":    "node",
									"image":   trainerImage,
									"command": []any{"gangboost-train"},
									"resources": map[string]any{"requests": map[string]any{
										"cpu": "1", "memory": "1Gi",
									}},
									"volumeMounts": []any{map[string]any{"name": "data", "mountPath": pvcMountPath}},
								}},
								"volumes": []any{map[string]any{
									"name":                  "data",
									"persistentVolumeClaim": map[string]any{"claimName": claimName},
								}},
							}}},
						},
					}},
				}},
		},
	}}
}

// TestTrainJobGang is the Trainer v2 path end to end: a TrainJob on an
// XGBoost ClusterTrainingRuntime with podGroupPolicy volcano. The real
// controllers make the JobSet, its Job's three pods with Trainer v2's
// DMLC_* env and Volcano's PodGroup (minMember 3, the runtime's queue);
// Volcano places the gang, the three gangboost-train ranks train together
// (rank 0 runs the tracker at DMLC_TRACKER_URI) and rank 0 writes the model
// to the claim; the TrainJob completes.
func TestTrainJobGang(t *testing.T) {
	c := cluster.Require(t)
	trainer := filepath.Join(testbin.Dir(t), "gangboost-train")
	if _, err := os.Stat(trainer); err != nil {
		t.Fatalf("trainer %s not found (run `make build`, or set GANGBOOST_BIN_DIR): %v", trainer, err)
	}
	ctx := context.Background()
	ns := "trainjob-" + rand.String(5)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvcDir := c.LocalPVC(t, ns, claimName)
	rt := clusterTrainingRuntime("gangboost-xgboost-" + ns)
	if err := cluster.Apply(ctx, c.Client, rt); err != nil {
		t.Fatal(err)
	}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": "iris", "namespace": ns},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": rt.GetName(), "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
			"trainer": map[string]any{"args": []any{
				"--dataset", "iris", "--label", "species", "--objective", "multi:softprob",
				"--num-round", "20", "--model-dir", pvcMountPath + "/models/iris/v1",
			}},
		},
	}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.LogTails(40))
		}
		_ = c.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground))
		_ = c.Client.Delete(ctx, rt)
		_ = c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		_ = c.Kube.CoreV1().PersistentVolumes().Delete(ctx, ns+"-"+claimName, metav1.DeleteOptions{})
	})
	start := time.Now()
	if err := c.Client.Create(ctx, job); err != nil {
		t.Fatalf("create TrainJob: %v", err)
	}

	// Trainer v2 runs the TrainJob as a JobSet of the same name.
	cluster.WaitFor(t, 60*time.Second, "JobSet iris", func(ctx context.Context) (bool, error) {
		js := &unstructured.Unstructured{}
		js.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
		js.SetKind("JobSet")
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "iris"}, js)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	var pg schedulingv1beta1.PodGroup
	cluster.WaitFor(t, 60*time.Second, "Volcano PodGroup iris", func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "iris"}, &pg)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if pg.Spec.MinMember != numNodes || pg.Spec.Queue != mlQueue {
		t.Errorf("PodGroup iris: minMember %d, queue %q; want %d, %q", pg.Spec.MinMember, pg.Spec.Queue, numNodes, mlQueue)
	}
	var pods []corev1.Pod
	cluster.WaitFor(t, 60*time.Second, fmt.Sprintf("%d pods of the TrainJob", numNodes), func(ctx context.Context) (bool, error) {
		l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=iris"})
		if err != nil {
			return false, err
		}
		pods = l.Items
		return len(pods) == numNodes, nil
	})
	for _, p := range pods {
		if p.Spec.SchedulerName != "volcano" || p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] != "iris" {
			t.Errorf("pod %s: schedulerName %q, group annotation %q; want volcano, iris",
				p.Name, p.Spec.SchedulerName, p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey])
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e
		}
		// What Trainer v2's XGBoost plugin injects (and gangboost-train reads).
		if got := env["DMLC_TRACKER_URI"].Value; got != "iris-node-0-0.iris" {
			t.Errorf("pod %s: DMLC_TRACKER_URI = %q, want iris-node-0-0.iris", p.Name, got)
		}
		if got := env["DMLC_NUM_WORKER"].Value; got != fmt.Sprint(numNodes) {
			t.Errorf("pod %s: DMLC_NUM_WORKER = %q, want %d", p.Name, got, numNodes)
		}
		if env["DMLC_TRACKER_PORT"].Value == "" {
			t.Errorf("pod %s: no DMLC_TRACKER_PORT", p.Name)
		}
		if ref := env["DMLC_TASK_ID"].ValueFrom; ref == nil || ref.FieldRef == nil || !strings.Contains(ref.FieldRef.FieldPath, "job-completion-index") {
			t.Errorf("pod %s: DMLC_TASK_ID = %+v, want the Job's completion index", p.Name, env["DMLC_TASK_ID"])
		}
	}

	var msg string
	cluster.WaitFor(t, 5*time.Minute, "TrainJob iris Complete", func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err
		}
		if s, m := cluster.TrainJobCondition(job, "Failed"); s == metav1.ConditionTrue {
			return false, cluster.Abort(fmt.Errorf("TrainJob failed: %s", m))
		}
		var s metav1.ConditionStatus
		s, msg = cluster.TrainJobCondition(job, "Complete")
		return s == metav1.ConditionTrue, nil
	})
	t.Logf("TrainJob iris Complete after %s: %s", time.Since(start).Round(time.Millisecond), msg)
	modelDir := filepath.Join(pvcDir, "models", "iris", "v1")
	if _, err := cluster.CheckModelFolder(modelDir); err != nil {
		t.Errorf("trained model folder: %v", err)
	}
	// The three ranks trained one model together through rank 0's tracker:
	// each logs the same model hash (ranks training alone on their share of
	// the data would not agree), and the tracker counted a world of three.
	hashes := map[string]bool{}
	sawWorld := false
	for _, p := range pods {
		b, err := c.Kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "node"}).DoRaw(ctx)
		if err != nil {
			t.Errorf("logs of %s: %v", p.Name, err)
			continue
		}
		log := string(b)
		t.Logf("%s:\n%s", p.Name, tailLines(log, 6))
		m := modelHash.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("pod %s logged no model_sha256 (did not finish training)", p.Name)
			continue
		}
		hashes[m[1]] = true
		sawWorld = sawWorld || worldOfThree.MatchString(log)
	}
	if len(hashes) != 1 {
		t.Errorf("ranks report %d different models, want one: %v", len(hashes), hashes)
	}
	if !sawWorld {
		t.Errorf("no rank logged its tracker with world_size %d", numNodes)
	}
}

var (
	modelHash    = regexp.MustCompile(`training finished.*model_sha256[=":]+\s*"?([0-9a-f]{64})`)
	worldOfThree = regexp.MustCompile(`tracker started.*world_size[=":]+\s*3\b`)
)

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
