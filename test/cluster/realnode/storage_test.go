package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/internal/steps/register"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/modelregistry"
	"github.com/gangboost/gangboost/test/s3server"
	"github.com/gangboost/gangboost/test/testbin"
)

// applyStorageContainer applies gangboost's ClusterStorageContainer for s3:// with the image this
// run imported.
func applyStorageContainer(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	objs := manifestObjects(t, "kserve", "clusterstoragecontainer.yaml")
	for _, o := range objs {
		want := "ghcr.io/gangboost/gangboost-storage-initializer:" + imageVersion
		if img, _, _ := unstructured.NestedString(o.Object, "spec", "container", "image"); img != want {
			t.Fatalf("ClusterStorageContainer %s names image %s; the imported archive holds %s", o.GetName(), img, want)
		}
		if err := unstructured.SetNestedField(o.Object, string(corev1.PullNever), "spec", "container", "imagePullPolicy"); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Apply(context.Background(), c.Client, objs...); err != nil {
		t.Fatal(err)
	}
}

// TestS3ModelOnRealNode: an InferenceService with an s3:// storageUri on the real node. KServe
// runs gangboost's storage initializer (its ClusterStorageContainer), with the credentials of the
// predictor's service account, from MinIO; the runtime then answers as libxgboost does on the
// model file. A model object changed after it was published fails the initializer, naming the
// object and both digests, and its pod never becomes Ready.
func TestS3ModelOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost-runtime")
	importImage(t, c, "gangboost-storage-initializer")
	applyServingRuntimes(t, c)
	applyStorageContainer(t, c)
	ns := namespace(t, c, "realnode-s3")
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	ip, err := cluster.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	podEndpoint := srv.ListenOn(t, ip.String())

	// Two versions published by the trainer; v2's model object is then replaced behind its metadata.
	for v, rounds := range map[string]int{"v1": 8, "v2": 3} {
		cmd := exec.Command(testbin.Installed(t, "gangboost-train"), "--dataset", "iris", "--objective", "multi:softprob",
			"--num-round", fmt.Sprint(rounds), "--nthread", "1", "--s3-endpoint", srv.Endpoint, "--s3-path-style",
			"--model-dir", "s3://models/team-a/iris/"+v+"/")
		cmd.Env = append(os.Environ(), srv.Env()...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("train %s: %v\n%s", v, err, out)
		}
	}
	modelFile := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(modelFile, srv.Get(t, "models", "team-a/iris/v1/model.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "models", "team-a/iris/v2/model.json", append(srv.Get(t, "models", "team-a/iris/v2/model.json"), '\n'))

	// The credentials as KServe reads them: a Secret annotated with the endpoint, named by the
	// predictor's service account.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s3Credentials(t, ctx, c, ns, strings.TrimPrefix(podEndpoint, "http://"))
	backend, err := deploykube.New(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := endpointHTTPClient(c)
	backend.HTTPClient = hc
	service := func(name, v string, timeout time.Duration) *deploy.Service {
		return &deploy.Service{
			Name: name, Namespace: ns, ModelURI: "s3://models/team-a/iris/" + v + "/", ServiceAccount: "models-reader",
			Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "200m", Memory: "256Mi", MinReplicas: 1, MaxReplicas: 1,
			Timeout: timeout, DeploymentMode: "RawDeployment", FSGroup: ptr.To(int64(65532)), Promotion: deploy.PromotionReplace,
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"iris-s3", "iris-corrupt"} {
			isvc := &kserveapi.InferenceService{}
			isvc.Name, isvc.Namespace = name, ns
			_ = c.Client.Delete(context.Background(), isvc, client.PropagationPolicy(metav1.DeletePropagationForeground))
		}
	})
	d := &deploy.Deployer{Backend: backend, Log: testLog{t}}
	t0 := time.Now()
	r, err := d.Deploy(ctx, service("iris-s3", "v1", 4*time.Minute))
	if err != nil {
		t.Fatalf("deploy s3://models/team-a/iris/v1/: %v", err)
	}
	t.Logf("ready from s3:// in %s", time.Since(t0).Round(time.Millisecond))
	got, want := inferWith(t, hc, r.URL, "iris-s3", irisRows, 4), libxgboostPredict(t, modelFile, irisRows, 4)
	if !sameAnswers(got, want) {
		t.Fatalf("the predictor answers %v; libxgboost on the model object gives %v", got, want)
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kserveapi.PodLabel: "iris-s3"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("predictor pods: %v %v", pods.Items, err)
	}
	init := pods.Items[0].Spec.InitContainers
	if len(init) != 1 || !strings.Contains(init[0].Image, "gangboost-storage-initializer") {
		t.Fatalf("the predictor's init containers %v: want gangboost's storage initializer", init)
	}

	// The corrupt version: the initializer fails naming the object and both digests; never Ready.
	_, err = d.Deploy(ctx, service("iris-corrupt", "v2", 90*time.Second))
	var nr *deploy.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("deploy of a corrupt object: %v, want a NotReadyError", err)
	}
	for _, want := range []string{"s3://models/team-a/iris/v2/model.json", "metadata.json records", "storage-initializer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure does not say %q:\n%v", want, err)
		}
	}
	var bad corev1.PodList
	if err := c.Client.List(ctx, &bad, client.InNamespace(ns), client.MatchingLabels{kserveapi.PodLabel: "iris-corrupt"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range bad.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				t.Errorf("pod %s container %s is Ready with a corrupt model", p.Name, cs.Name)
			}
		}
	}
}

// TestModelRegistryURIOnRealNode: an InferenceService with storageUri model-registry://iris/v1 on
// the real node. The registry's own storage initializer (its cmd/csi, built into the tool cache,
// as its ClusterStorageContainer from manifests/kserve) asks the real registry for the version's
// artifact, downloads it from MinIO with the predictor's service account's credentials, and the
// runtime answers as libxgboost does on the model object.
func TestModelRegistryURIOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	workloadsOnRealNode(t, c)
	importImage(t, c, "gangboost-runtime")
	applyServingRuntimes(t, c)
	ip, err := cluster.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	reg := modelregistry.StartOn(t, ip.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const csiImage = "localhost/model-registry-storage-initializer:" + cluster.ModelRegistryVersion
	if err := c.ImportBinary(ctx, csiImage, reg.CSI); err != nil {
		t.Fatal(err)
	}
	objs := manifestObjects(t, "kserve", "model-registry-storage-container.yaml")
	for _, o := range objs {
		for _, f := range []struct {
			value string
			path  []string
		}{{csiImage, []string{"spec", "container", "image"}}, {string(corev1.PullNever), []string{"spec", "container", "imagePullPolicy"}}} {
			if err := unstructured.SetNestedField(o.Object, f.value, f.path...); err != nil {
				t.Fatal(err)
			}
		}
		env := []any{map[string]any{"name": "MODEL_REGISTRY_BASE_URL", "value": reg.Host}, map[string]any{"name": "MODEL_REGISTRY_SCHEME", "value": "http"}}
		if err := unstructured.SetNestedSlice(o.Object, env, "spec", "container", "env"); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Apply(ctx, c.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), objs[0]) })

	ns := namespace(t, c, "realnode-registry")
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	podEndpoint := srv.ListenOn(t, ip.String())
	cmd := exec.Command(testbin.Installed(t, "gangboost-train"), "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", "6", "--nthread", "1", "--s3-endpoint", srv.Endpoint, "--s3-path-style", "--model-dir", "s3://models/team-a/iris/v1/")
	cmd.Env = append(os.Environ(), srv.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	modelFile := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(modelFile, srv.Get(t, "models", "team-a/iris/v1/model.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := register.New(reg.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.RegisterVersion(ctx, register.Model{Name: "iris", Version: "v1", URI: "s3://models/team-a/iris/v1/"}); err != nil {
		t.Fatal(err)
	}
	s3Credentials(t, ctx, c, ns, strings.TrimPrefix(podEndpoint, "http://"))
	backend, err := deploykube.New(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := endpointHTTPClient(c)
	backend.HTTPClient = hc
	t.Cleanup(func() {
		isvc := &kserveapi.InferenceService{}
		isvc.Name, isvc.Namespace = "iris-registry", ns
		_ = c.Client.Delete(context.Background(), isvc, client.PropagationPolicy(metav1.DeletePropagationForeground))
	})
	d := &deploy.Deployer{Backend: backend, Log: testLog{t}}
	t0 := time.Now()
	r, err := d.Deploy(ctx, &deploy.Service{
		Name: "iris-registry", Namespace: ns, ModelURI: "model-registry://iris/v1", ServiceAccount: "models-reader",
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "200m", Memory: "256Mi", MinReplicas: 1, MaxReplicas: 1,
		Timeout: 4 * time.Minute, DeploymentMode: "RawDeployment", FSGroup: ptr.To(int64(65532)), Promotion: deploy.PromotionReplace,
	})
	if err != nil {
		t.Fatalf("deploy model-registry://iris/v1: %v", err)
	}
	t.Logf("ready from model-registry:// in %s", time.Since(t0).Round(time.Millisecond))
	got, want := inferWith(t, hc, r.URL, "iris-registry", irisRows, 4), libxgboostPredict(t, modelFile, irisRows, 4)
	if !sameAnswers(got, want) {
		t.Fatalf("the predictor answers %v; libxgboost on the registered model gives %v", got, want)
	}
}

// s3Credentials creates the Secret KServe reads S3 credentials from (annotated with the endpoint)
// and the service account models-reader naming it, in ns.
func s3Credentials(t *testing.T, ctx context.Context, c *cluster.Cluster, ns, endpoint string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "models-s3", Namespace: ns, Annotations: map[string]string{
		"serving.kserve.io/s3-endpoint": endpoint, "serving.kserve.io/s3-usehttps": "0",
		"serving.kserve.io/s3-usevirtualbucket": "false", "serving.kserve.io/s3-region": "us-east-1"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3server.AccessKey, "AWS_SECRET_ACCESS_KEY": s3server.SecretKey}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "models-reader", Namespace: ns},
		Secrets: []corev1.ObjectReference{{Name: "models-s3"}}}
	for _, o := range []client.Object{secret, sa} {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
