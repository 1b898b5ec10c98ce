package realnode

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/cluster"
)

// TestTrainJobOnRealNode runs the Kubeflow Trainer v2 path of launch-xgboostjob (job_api
// trainjob) on the real node: its Kubernetes backend creates the TrainJob its builder makes on the
// ClusterTrainingRuntime of manifests/trainer/, and follows it to the end. Trainer v2 and JobSet
// make a Job of 3 pods of the gangboost image with Trainer's DMLC_* env and a PodGroup Volcano
// places; rank 1 and 2 find rank 0's tracker at DMLC_TRACKER_URI (<job>-node-0-0.<job>, the
// JobSet's headless Service) through the cluster DNS, the ranks train one model together, and
// rank 0 writes it to the claim with its sha256.
func TestTrainJobOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := namespace(t, c, "realnode-trainjob")
	claim, claimDir := trainerClaim(t, c, ns, "trainjob")
	applyTrainingRuntime(t, c)

	job := &launch.Job{
		API: launch.APITrainJob, TrainingRuntime: launch.DefaultTrainingRuntime,
		Name: "iris", Namespace: ns,
		Identity:     launch.Identity{RunID: "realnode", TaskName: "launch"},
		Image:        version.Image("gangboost"),
		Workers:      2,
		Data:         launch.Data{Dataset: "iris"},
		TrainerFlags: []string{"--label", "species", "--objective", "multi:softprob", "--num-round", "20"},
		Resources:    launch.Resources{CPU: "200m", Memory: "256Mi"},
		Claim:        claim, MountPath: "/mnt/pvc",
		ModelName: "iris", ModelVersion: "v1",
		Gang:     launch.Gang{Queue: "ml-training"},
		Security: launch.PodSecurity{FSGroup: ptr.To(int64(65532))},
	}
	backend, err := kube.New(c.Config, launch.APITrainJob)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := backend.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	watchErr := backend.Watch(ctx, job, func(p launch.Progress) {
		if p.Line != "" {
			t.Logf("+%6.2fs %s", time.Since(t0).Seconds(), p.Line)
		}
	})
	took := time.Since(t0)
	pods, _ := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.JobSetNameLabel + "=" + job.Name})
	checkGangPods(t, pods.Items)
	if watchErr != nil {
		logPods(t, c, ns, pods.Items, kube.TrainerNode)
		t.Fatalf("TrainJob %s: %v", job.Name, watchErr)
	}
	t.Logf("3-rank TrainJob trained on the real node in %s after create", took.Round(time.Millisecond))
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want 3 nodes", len(pods.Items))
	}
	// The ranks trained one model through rank 0's tracker: each logs the same model hash
	// (ranks training alone on their share of the data would not agree).
	hashes := map[string]bool{}
	for _, p := range pods.Items {
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["DMLC_TRACKER_URI"] != "iris-node-0-0.iris" || env["DMLC_NUM_WORKER"] != "3" {
			t.Errorf("pod %s: DMLC_TRACKER_URI %q, DMLC_NUM_WORKER %q; want Trainer v2's iris-node-0-0.iris and 3",
				p.Name, env["DMLC_TRACKER_URI"], env["DMLC_NUM_WORKER"])
		}
		logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: kube.TrainerNode}).DoRaw(ctx)
		if m := modelHash.FindSubmatch(logs); err != nil || m == nil {
			t.Errorf("pod %s logged no model_sha256 (%v)", p.Name, err)
		} else {
			hashes[string(m[1])] = true
		}
	}
	md, err := cluster.CheckModelFolder(filepath.Join(claimDir, "models", "iris", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 1 || !hashes[md.ModelSHA256] {
		t.Errorf("ranks report models %v; want the one model on the claim, sha256 %s", hashes, md.ModelSHA256)
	}
	t.Logf("model on the claim: %s sha256 %s", md.ModelFile, md.ModelSHA256)
}

var modelHash = regexp.MustCompile(`training finished.*model_sha256[=":]+\s*"?([0-9a-f]{64})`)

// applyTrainingRuntime applies manifests/trainer (kubectl apply -k, as make deploy-trainer-runtime
// does): the ClusterTrainingRuntime, whose image must be this run's gangboost image (imported into
// the node; each TrainJob names it too), and the PriorityClass read access Trainer's controller
// needs to admit TrainJobs on it.
func applyTrainingRuntime(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.Kustomize(context.Background(), filepath.Join(root, "manifests", "trainer"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		jobs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "replicatedJobs")
		for _, rj := range jobs {
			containers, _, _ := unstructured.NestedSlice(rj.(map[string]any), "template", "spec", "template", "spec", "containers")
			for _, ctr := range containers {
				if img := ctr.(map[string]any)["image"]; img != version.Image("gangboost") {
					t.Fatalf("ClusterTrainingRuntime %s names image %v; the imported archive holds %s", o.GetName(), img, version.Image("gangboost"))
				}
			}
		}
	}
	if err := cluster.Apply(context.Background(), c.Client, objs...); err != nil {
		t.Fatal(err)
	}
}
