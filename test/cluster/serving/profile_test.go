package serving

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/nbrun"
	"github.com/gangboost/gangboost/test/s3server"
	"github.com/gangboost/gangboost/test/testbin"
)

// TestPipelineInKubeflowProfile runs the package as a multi-user Kubeflow platform runs it: in a
// profile namespace, every step as the profile's default-editor, whose only grants come from
// Kubeflow's kubeflow-edit ClusterRole. First without gangboost's roles, where launch-xgboostjob is
// refused and says what to apply; then with manifests/kubeflow applied, whose gangboost-edit
// kube-controller-manager's clusterrole-aggregation controller folds into kubeflow-edit, where the
// whole package runs (gang-scheduled job, InferenceService, evaluation) with nothing else: no
// gangboost namespace, no account or Role of gangboost's in the profile.
func TestPipelineInKubeflowProfile(t *testing.T) {
	c := cluster.Require(t)
	c.RemoveKubeflowEdit(t) // what an earlier run of this binary left
	profile := c.NewProfile(t, "team")
	e := deployEnvIn(t, profile.Namespace)
	removeRunObjects(t, e)

	// Refused: kubeflow-edit aggregates nothing of gangboost's yet.
	_, res, _, output, err := runPackage(t, e, cluster.DefaultEditor, nil)
	if err == nil {
		t.Fatalf("the package ran as %s without gangboost's roles:\n%s", cluster.DefaultEditor, output)
	}
	if res == nil {
		t.Fatalf("no run result: %v", err)
	}
	if task := res.Task("prepare-data"); task == nil || task.State != localrun.StateSucceeded {
		t.Errorf("prepare-data (no API calls) did not succeed without the roles: %+v", task)
	}
	user := cluster.ServiceAccountUser(profile.Namespace, cluster.DefaultEditor)
	for _, want := range []string{"forbidden", user, "gangboost-edit", "kubeflow-edit"} {
		if !strings.Contains(output, want) {
			t.Errorf("the refused launch's output lacks %q:\n%s", want, output)
		}
	}
	var jobs kubeflowv1.XGBoostJobList
	if err := c.Client.List(context.Background(), &jobs, client.InNamespace(profile.Namespace)); err != nil || len(jobs.Items) != 0 {
		t.Errorf("XGBoostJobs in %s after the refusal: %d (%v), want none", profile.Namespace, len(jobs.Items), err)
	}

	// Granted: what manifests/kubeflow adds, through the aggregation.
	took := c.ApplyKubeflowEdit(t)
	t.Logf("kubeflow-edit aggregated gangboost-edit %s after the apply", took.Round(1e6))
	t.Cleanup(func() { c.RemoveKubeflowEdit(t) })

	// The data set from the platform's object store, as Kubeflow 1.11 sets it up: bucket
	// mlpipeline, the namespace's own key pair in its Secret mlpipeline-minio-artifact, a policy
	// that lets that key use only the namespace's prefixes (and the shared ones). The package's
	// defaults name that Secret; the endpoint is the test's MinIO instead of Kubeflow's service.
	store := s3server.Start(t)
	store.MakeBucket(t, "mlpipeline")
	const key, secret = "team-key", "team-secret-0123456789"
	store.AddUser(t, key, secret, s3server.KubeflowNamespacePolicy(profile.Namespace))
	iris, err := os.ReadFile(filepath.Join(testbin.Root(t), "internal", "training", "dataset", "iris.csv"))
	if err != nil {
		t.Fatal(err)
	}
	own := "private-artifacts/" + profile.Namespace + "/data/iris.csv"
	other := "private-artifacts/other-team/data/iris.csv"
	store.Put(t, "mlpipeline", own, iris)
	store.Put(t, "mlpipeline", other, iris)
	if err := c.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: storesecret.KubeflowSecret, Namespace: profile.Namespace},
		Data:       map[string][]byte{storesecret.KubeflowAccessKeyKey: []byte(key), storesecret.KubeflowSecretKeyKey: []byte(secret)},
	}); err != nil {
		t.Fatal(err)
	}
	params := func(object string) map[string]string {
		return map[string]string{"dataset": "s3://mlpipeline/" + object, "label": "species", "object_store_endpoint": store.Endpoint}
	}

	// Another namespace's prefix: refused by the store, and prepare-data says so.
	_, res, _, output, err = runPackage(t, e, cluster.DefaultEditor, params(other))
	if err == nil {
		t.Fatalf("the package read another namespace's data:\n%s", output)
	}
	for _, want := range []string{"s3://mlpipeline/" + other, "denied it to the access key of Secret " + profile.Namespace + "/" + storesecret.KubeflowSecret,
		`bucket "mlpipeline", key "` + other + `"`, "private-artifacts/<namespace>/"} {
		if !strings.Contains(output, want) {
			t.Errorf("the refused read's output lacks %q:\n%s", want, output)
		}
	}
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, "denied it to") {
			t.Logf("refused: %s", strings.TrimSpace(line))
		}
	}
	if task := res.Task("launch-xgboostjob"); task != nil && task.State == localrun.StateSucceeded {
		t.Error("the run went on to train after prepare-data was refused")
	}

	// The namespace's own prefix: the whole package runs on it.
	store.ResetRequests()
	output = checkPackageRun(t, e, cluster.DefaultEditor, params(own))
	if want := "reading s3://mlpipeline/" + own + " with the key pair of Secret " + profile.Namespace + "/" + storesecret.KubeflowSecret; !strings.Contains(output, want) {
		t.Errorf("run output lacks %q", want)
	}
	read := false
	for _, r := range store.Requests() {
		read = read || (r.Method == "GET" && r.Key == own && r.Status == 200)
	}
	if !read {
		t.Errorf("the store served no GET of %s: %+v", own, store.Requests())
	}

	checkNotebookInProfile(t, c, profile.Namespace, e.pvcDir)
}

// checkNotebookInProfile runs notebooks/predict.ipynb as a Kubeflow notebook pod of the profile
// runs it: no endpoint given, so it reads the InferenceService's status.address.url from the API
// server with the pod's service account (default-editor: its token, the cluster's CA, the
// namespace, where Kubernetes mounts them), then calls the model there (cluster DNS and the
// Service stand in the test's Service proxy).
func checkNotebookInProfile(t *testing.T, c *cluster.Cluster, namespace, pvcDir string) {
	t.Helper()
	nbrun.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tok, err := c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, cluster.DefaultEditor, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca := c.Config.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	sa := t.TempDir()
	for name, data := range map[string][]byte{"token": []byte(tok.Status.Token), "ca.crt": ca, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(sa, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := cluster.ServiceProxy(ctx, c.Kube)
	if err != nil {
		t.Fatal(err)
	}
	var isvc kserveapi.InferenceService
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "iris"}, &isvc); err != nil || isvc.Status.Address == nil {
		t.Fatalf("InferenceService iris: %v, address %v", err, isvc.Status.Address)
	}
	metadata, _ := filepath.Glob(filepath.Join(pvcDir, "models", "iris", "*", "metadata.json"))
	if len(metadata) == 0 {
		t.Fatal("no model metadata on the claim")
	}
	out := filepath.Join(t.TempDir(), "predict.executed.ipynb")
	cmd := nbrun.Command(filepath.Join(testbin.Root(t), "notebooks", "predict.ipynb"), out, t.TempDir())
	cmd.Env = append(os.Environ(), "GANGBOOST_ENDPOINT=", "GANGBOOST_NAMESPACE=", "GANGBOOST_MODEL=iris", "GANGBOOST_MODEL_METADATA="+metadata[0],
		"GANGBOOST_SERVICE_ACCOUNT_DIR="+sa, "KUBERNETES_SERVICE_HOST="+api.Hostname(), "KUBERNETES_SERVICE_PORT="+api.Port(),
		"http_proxy=http://"+proxy, "HTTP_PROXY=http://"+proxy, "https_proxy=", "HTTPS_PROXY=", "no_proxy=", "NO_PROXY=",
		"MPLBACKEND=module://matplotlib_inline.backend_inline")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("notebook failed: %v\n%s", err, b)
	}
	shown := nbrun.OutputsText(t, out)
	for _, want := range []string{isvc.Status.Address.URL + " iris", "binary and JSON answers agree", "setosa"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the notebook's outputs lack %q:\n%s", want, shown)
		}
	}
	t.Logf("the notebook found %s through the API as %s/%s", isvc.Status.Address.URL, namespace, cluster.DefaultEditor)
}
