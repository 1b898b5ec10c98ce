package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/cluster"
)

// TestTrainAndServeOnRealNode is the product's path on the real node, every part a container of
// a make images image: the XGBoostJob launch-xgboostjob builds trains a model onto a claim, and
// deploy-inferenceservice's InferenceService serves that model through KServe's controller.
func TestTrainAndServeOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost")
	importImage(t, c, "gangboost-runtime")
	ns := namespace(t, c, "realnode-gang")
	claim, claimDir := trainerClaim(t, c, ns, "gang")
	t.Run("XGBoostJob", func(t *testing.T) { trainXGBoostJob(t, c, ns, claim, claimDir) })
	if t.Failed() {
		return
	}
	t.Run("InferenceService", func(t *testing.T) {
		serveThroughKServe(t, c, ns, claim, claimDir, "models/iris/v1")
	})
}

// trainXGBoostJob runs the XGBoostJob launch-xgboostjob builds (Master + 2 Workers of the
// gangboost image, uid 65532) on the real node: the Training Operator creates the pods and their
// headless Services, Volcano places the gang, the ranks find the Master by its Service name
// through the cluster DNS and train together, and rank 0 writes the model to the claim's
// models/iris/v1 with its sha256 in metadata.json.
func trainXGBoostJob(t *testing.T, c *cluster.Cluster, ns, claim, claimDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	job := &launch.Job{
		Name: "iris-gang", Namespace: ns,
		Identity:     launch.Identity{RunID: "realnode", TaskName: "launch"},
		Image:        version.Image("gangboost"),
		Workers:      2,
		Data:         launch.Data{Dataset: "iris"},
		TrainerFlags: []string{"--label", "species", "--objective", "multi:softprob", "--num-round", "20"},
		Resources:    launch.Resources{CPU: "200m", Memory: "256Mi"},
		Claim:        claim, MountPath: "/mnt/pvc",
		ModelName: "iris", ModelVersion: "v1",
		Port:     9999,
		Gang:     launch.Gang{Queue: "ml-training", PriorityClass: "gangboost-training"},
		Security: launch.PodSecurity{FSGroup: ptr.To(int64(65532))},
	}
	xj, err := kube.XGBoostJob(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range xj.Spec.XGBReplicaSpecs {
		rs.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	}
	t0 := time.Now()
	if err := c.Client.Create(ctx, xj); err != nil {
		t.Fatal(err)
	}
	var got kubeflowv1.XGBoostJob
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(xj), &got); err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if (cond.Type == kubeflowv1.JobSucceeded || cond.Type == kubeflowv1.JobFailed) && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	took := time.Since(t0)
	pods, _ := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.JobNameLabel + "=" + xj.Name})
	checkGangPods(t, pods.Items)
	if err != nil || !succeeded(&got) {
		logPods(t, c, ns, pods.Items, "")
		t.Fatalf("XGBoostJob %s did not succeed (%v): %+v", xj.Name, err, got.Status.Conditions)
	}
	t.Logf("3-rank gang trained on the real node in %s after create", took.Round(time.Millisecond))
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want Master + 2 Workers", len(pods.Items))
	}
	md, err := cluster.CheckModelFolder(filepath.Join(claimDir, "models", "iris", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model on the claim: %s sha256 %s", md.ModelFile, md.ModelSHA256)
}

// checkGangPods logs where each pod of a gang ran and how it ended, and checks that Volcano
// placed it on the real node.
func checkGangPods(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		var state string
		if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
			state = cs[0].State.Terminated.Reason + ": " + cs[0].State.Terminated.Message
		}
		t.Logf("pod %s: %s on %s (scheduler %s, ip %s) %s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.SchedulerName, p.Status.PodIP, state)
		if p.Spec.NodeName != cluster.RealNodeName || p.Spec.SchedulerName != "volcano" {
			t.Errorf("pod %s placed on %q by %q, want the real node by volcano", p.Name, p.Spec.NodeName, p.Spec.SchedulerName)
		}
	}
}

// logPods logs the pods' logs (of container, or the only one when ""), through pods/log.
func logPods(t *testing.T, c *cluster.Cluster, ns string, pods []corev1.Pod, container string) {
	t.Helper()
	for _, p := range pods {
		logs, _ := c.Kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
		t.Logf("logs of %s:\n%s", p.Name, logs)
	}
}

// workloadsOnRealNode taints the fake nodes (cluster.ProcessNodeTaint), as make demo-cluster
// does, so the schedulers (Volcano for the gangs, kube-scheduler for KServe's predictors and the
// pipeline's step pods) place every pod on the real node.
func workloadsOnRealNode(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	if err := c.TaintFakeNodes(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// importImage imports the image of this run's make images into the real node's containerd.
func importImage(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	archive := requireImage(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := c.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %s in %s", filepath.Base(archive), time.Since(t0).Round(time.Millisecond))
}

// trainerClaim is a claim on a folder of the run whose root is root:root 755, as a provisioner
// that ignores fsGroup (an NFS export) hands one out, made writable for the steps and pods (uid
// 65532) by the documented one-shot Job, manifests/claim-init; it returns the claim's name
// and the folder.
func trainerClaim(t *testing.T, c *cluster.Cluster, ns, name string) (string, string) {
	t.Helper()
	dir := filepath.Join(c.Dir, "claims", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	claim := claimOn(t, c, ns, "gangboost-models", dir)
	runClaimInit(t, c, ns, claim)
	return claim, dir
}

// runClaimInit runs manifests/claim-init's Job on claim in ns (the gangboost image of this
// run, on the real node) and waits for it to complete.
func runClaimInit(t *testing.T, c *cluster.Cluster, ns, claim string) {
	t.Helper()
	importImage(t, c, "gangboost")
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "manifests", "claim-init", "claim-init.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatal(err)
	}
	job.Namespace = ns
	spec := &job.Spec.Template.Spec
	if want := "ghcr.io/gangboost/gangboost:" + imageVersion; spec.Containers[0].Image != want {
		t.Fatalf("claim-init.yaml names image %s; the imported archive holds %s", spec.Containers[0].Image, want)
	}
	spec.Containers[0].ImagePullPolicy = corev1.PullNever
	spec.Volumes[0].PersistentVolumeClaim.ClaimName = claim
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Client.Create(ctx, &job); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var lastGet error
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		// A Get a busy API server does not answer in time is asked again, not the end of the wait.
		if lastGet = c.Client.Get(ctx, client.ObjectKeyFromObject(&job), &job); lastGet != nil {
			return false, nil
		}
		if job.Status.Failed > 0 {
			return false, fmt.Errorf("claim-init failed: %+v", job.Status)
		}
		return job.Status.Succeeded > 0, nil
	})
	if err != nil {
		t.Fatalf("claim-init Job on %s/%s: %v (last Get: %v)", ns, claim, err, lastGet)
	}
	t.Logf("claim-init completed in %s", time.Since(t0).Round(time.Millisecond))
}

func succeeded(j *kubeflowv1.XGBoostJob) bool {
	for _, cond := range j.Status.Conditions {
		if cond.Type == kubeflowv1.JobSucceeded && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// claimOn creates a ReadWriteMany claim bound to a hostPath volume at dir and returns its name.
func claimOn(t *testing.T, c *cluster.Cluster, ns, name, dir string) string {
	t.Helper()
	ctx := context.Background()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}
