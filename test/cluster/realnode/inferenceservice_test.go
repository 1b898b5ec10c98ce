package realnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/test/cluster"
)

// irisRows are Iris rows, one of each species.
var irisRows = []float32{
	5.1, 3.5, 1.4, 0.2,
	5.9, 3.0, 4.2, 1.5,
	6.7, 3.0, 5.2, 2.3,
}

// serveThroughKServe serves the model folder modelPath of the claim as deploy-inferenceservice
// does (its Kubernetes backend: server-side apply of the InferenceService, then the wait until it
// serves), on the gangboost-xgboost ClusterServingRuntime of manifests/ with the runtime image of
// this run. KServe's controller makes the Deployment, its pod mutator mounts the claim's folder
// at /mnt/models, kube-scheduler places the predictor on the real node and the kubelet runs the
// image with the manifest's security context and probes. The service's url answers V2 infer, as
// a pod would reach it (the cluster DNS names the Service's ClusterIP, kube-proxy's rules take
// it to the pod), with libxgboost's predictions for that model file.
func serveThroughKServe(t *testing.T, c *cluster.Cluster, ns, claim, claimDir, modelPath string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	applyServingRuntimes(t, c)
	md, err := cluster.CheckModelFolder(filepath.Join(claimDir, modelPath))
	if err != nil {
		t.Fatal(err)
	}
	want := libxgboostPredict(t, filepath.Join(claimDir, modelPath, md.ModelFile), irisRows, 4)

	backend, err := deploykube.New(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Deploy checks that the model answers through the Service, as a pod would call it: this
	// process resolves the Service's name with the cluster DNS on the real node.
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, cluster.RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nodeIP string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	backend.HTTPClient = clusterHTTPClient(nodeIP)
	svc := &deploy.Service{
		Name: "iris", Namespace: ns,
		ModelURI: "pvc://" + claim + "/" + modelPath, Claim: claim, ModelPath: modelPath,
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2",
		CPU: "200m", Memory: "256Mi", MinReplicas: 1, MaxReplicas: 1,
		Timeout: 3 * time.Minute, RunID: "realnode", DeploymentMode: "RawDeployment",
		FSGroup: ptr.To(int64(65532)),
	}
	// The predictor's CPU goes back to the node for the tests after this one.
	t.Cleanup(func() {
		isvc := &kserveapi.InferenceService{}
		isvc.Name, isvc.Namespace = svc.Name, ns
		_ = c.Client.Delete(context.Background(), isvc, client.PropagationPolicy(metav1.DeletePropagationForeground))
		err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			var pods corev1.PodList
			err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kserveapi.PodLabel: svc.Name})
			return err == nil && len(pods.Items) == 0, nil
		})
		if err != nil {
			t.Errorf("predictor pods of %s still there 90s after its deletion", svc.Name)
		}
	})
	t0 := time.Now()
	ep, err := (&deploy.Deployer{Backend: backend, Log: testLog{t}}).Run(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("InferenceService %s Ready %s after apply: %s", svc.Name, time.Since(t0).Round(time.Millisecond), ep.URL)

	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kserveapi.PodLabel: svc.Name}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("predictor pods of %s: %d (%v), want 1", svc.Name, len(pods.Items), err)
	}
	p := pods.Items[0]
	t.Logf("predictor pod %s on %s (scheduler %s) at %s", p.Name, p.Spec.NodeName, p.Spec.SchedulerName, p.Status.PodIP)
	if p.Spec.NodeName != cluster.RealNodeName || p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Status.PodIP == "" {
		t.Errorf("predictor pod %s placed on %q by %q with IP %q; want the real node by %s and a bridge address",
			p.Name, p.Spec.NodeName, p.Spec.SchedulerName, p.Status.PodIP, corev1.DefaultSchedulerName)
	}
	checkModelMount(t, &p, claim, modelPath)
	checkContainerProcess(t, "gangboost-runti", p.Name)

	got := inferThroughService(t, ep.URL, p.Status.HostIP, svc.Name, irisRows, 4)
	if len(got) != len(want) {
		t.Fatalf("V2 infer at %s: %d values %v, libxgboost gives %d %v", ep.URL, len(got), got, len(want), want)
	}
	if !sameAnswers(got, want) {
		t.Fatalf("V2 infer at %s: %v, libxgboost gives %v", ep.URL, got, want)
	}
	t.Logf("V2 infer at %s answers libxgboost's %d values for %s", ep.URL, len(want), svc.ModelURI)
}

// manifestObjects decodes the objects of a file under the checkout's manifests/.
func manifestObjects(t *testing.T, path ...string) []*unstructured.Unstructured {
	t.Helper()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.DecodeFiles(filepath.Join(append([]string{root, "manifests"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// applyServingRuntimes applies manifests/clusterservingruntime.yaml, its containers' images
// being this run's runtime image, imported into the node: with imagePullPolicy Never the kubelet
// takes it from containerd (there is no registry) and says so if it is missing.
func applyServingRuntimes(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	objs := manifestObjects(t, "clusterservingruntime.yaml")
	wantImage := "ghcr.io/gangboost/gangboost-runtime:" + imageVersion
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
		for _, ctr := range containers {
			m := ctr.(map[string]any)
			if m["image"] != wantImage {
				t.Fatalf("ClusterServingRuntime %s names image %v; the imported archive holds %s", o.GetName(), m["image"], wantImage)
			}
			m["imagePullPolicy"] = string(corev1.PullNever)
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "containers"); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Apply(context.Background(), c.Client, objs...); err != nil {
		t.Fatal(err)
	}
}

// checkModelMount checks what KServe's pod mutator made of the storageUri: the claim mounted at
// /mnt/models with the model's path as subPath, and the runtime's image and arguments.
func checkModelMount(t *testing.T, p *corev1.Pod, claim, modelPath string) {
	t.Helper()
	var kc *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == kserveapi.ContainerName {
			kc = &p.Spec.Containers[i]
		}
	}
	if kc == nil {
		t.Fatalf("pod %s has no %s", p.Name, kserveapi.ContainerName)
	}
	if kc.Image != "ghcr.io/gangboost/gangboost-runtime:"+imageVersion || !strings.Contains(strings.Join(kc.Args, " "), "--model_dir=/mnt/models") {
		t.Errorf("%s: image %s, args %q", kserveapi.ContainerName, kc.Image, kc.Args)
	}
	for _, vm := range kc.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if vm.MountPath == "/mnt/models" && v.Name == vm.Name && v.PersistentVolumeClaim != nil &&
				v.PersistentVolumeClaim.ClaimName == claim && vm.SubPath == modelPath {
				return
			}
		}
	}
	t.Errorf("%s does not mount claim %s at /mnt/models with subPath %s: mounts %+v, volumes %+v",
		kserveapi.ContainerName, claim, modelPath, kc.VolumeMounts, p.Spec.Volumes)
}

// clusterHTTPClient calls cluster URLs as a pod on the real node would: their names resolved by
// the cluster DNS on nodeIP, no proxy.
func clusterHTTPClient(nodeIP string) *http.Client {
	clusterDNS := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", net.JoinHostPort(nodeIP, "53"))
	}}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil,
		// A connection per request, as a pod's first calls to a new Service need: one opened
		// before kube-proxy's rules for the ClusterIP were in went out by the host's default
		// route (on the CI machines an egress proxy answering 404), and kept alive it kept every
		// later call there (TestTrainAndServeOnRealNode: 404 for the deploy step's 3 minutes).
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := clusterDNS.LookupHost(ctx, host+".")
			if err != nil {
				return nil, fmt.Errorf("cluster DNS: %w", err)
			}
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ips[0], port))
		},
	}}
}

// endpointHTTPClient calls <service>.<namespace>.svc.cluster.local[:port] at one of the
// Service's ready endpoints (its EndpointSlices, the Service port's target port), as kube-proxy's
// rules would send it. The promotion test uses it because it creates and removes Services in
// quick succession, and on this test plane a new Service's ClusterIP has twice answered 404 from
// the host's default route for minutes; a kept-alive connection opened in the moment before
// kube-proxy's rules for it were in explains that (clusterHTTPClient has since opened a
// connection per request). The Services and endpoints are KServe's own.
func endpointHTTPClient(c *cluster.Cluster) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			parts := strings.Split(host, ".")
			if len(parts) < 3 || parts[2] != "svc" {
				return nil, fmt.Errorf("%s does not name a Service", host)
			}
			svc, err := c.Kube.CoreV1().Services(parts[1]).Get(ctx, parts[0], metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			target := ""
			for _, p := range svc.Spec.Ports {
				if strconv.Itoa(int(p.Port)) == port {
					target = p.TargetPort.String()
				}
			}
			if target == "" || target == "0" {
				target = port
			}
			slices, err := c.Kube.DiscoveryV1().EndpointSlices(parts[1]).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + parts[0]})
			if err != nil {
				return nil, err
			}
			for _, sl := range slices.Items {
				for _, e := range sl.Endpoints {
					if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
						return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(e.Addresses[0], target))
					}
				}
			}
			return nil, fmt.Errorf("service %s/%s has no ready endpoint", parts[1], parts[0])
		},
	}}
}

// inferThroughService posts a V2 REST request for rows of ncol FP32 features to the model at
// base (http://<service>.<namespace>.svc.cluster.local) and returns output-0. The name is
// resolved by the cluster DNS on nodeIP, as a pod's resolver would.
func inferThroughService(t *testing.T, base, nodeIP, model string, rows []float32, ncol int) []float32 {
	t.Helper()
	return inferWith(t, clusterHTTPClient(nodeIP), base, model, rows, ncol)
}

// inferWith is inferThroughService with the client hc.
func inferWith(t *testing.T, hc *http.Client, base, model string, rows []float32, ncol int) []float32 {
	t.Helper()
	// The service is Ready once its pod is; kube-proxy routes the ClusterIP to the pod once the
	// EndpointSlice controller has listed it as ready and kube-proxy has synced that, a moment
	// later. Until then a connection is refused (kube-proxy's rule for a Service without
	// endpoints) or, from this host, leaves by the default route to whatever answers there: a
	// client retries, as evaluate does.
	t0 := time.Now()
	var before string
	for {
		got, err := tryInfer(hc, base, model, rows, ncol)
		if err == nil {
			if before != "" {
				t.Logf("the Service answered %s after the InferenceService was Ready; before: %s", time.Since(t0).Round(time.Millisecond), before)
			}
			return got
		}
		var bad *badAnswerError
		if errors.As(err, &bad) {
			t.Fatal(err)
		}
		if before == "" {
			before = err.Error()
		}
		// A hang guard, not a figure: the wait is logged above.
		if time.Since(t0) > 90*time.Second {
			t.Fatalf("V2 infer through the Service at %s: %v", base, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// badAnswerError is a 200 answer that is not the model's V2 answer.
type badAnswerError struct{ msg string }

func (e *badAnswerError) Error() string { return e.msg }

// tryInfer makes one V2 REST call of rows to model at base and returns output-0.
func tryInfer(hc *http.Client, base, model string, rows []float32, ncol int) ([]float32, error) {
	u, err := url.JoinPath(base, "v2", "models", model, "infer")
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{
		"name": "input-0", "datatype": "FP32", "shape": []int{len(rows) / ncol, ncol}, "data": rows}}})
	resp, err := hc.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s (Server %q): %s", resp.Status, resp.Header.Get("Server"), raw)
	}
	var out struct {
		ModelName string `json:"model_name"`
		Outputs   []struct {
			Name string    `json:"name"`
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.ModelName != model || len(out.Outputs) == 0 || out.Outputs[0].Name != "output-0" {
		return nil, &badAnswerError{fmt.Sprintf("POST %s answered %s (%v), want model_name %s and output-0", u, raw, err, model)}
	}
	return out.Outputs[0].Data, nil
}

// sameAnswers reports whether got holds want's values, each within 1e-6: the runtime's answer
// and libxgboost's for the same model file and rows.
func sameAnswers(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// libxgboostPredict is libxgboost's own prediction (what Booster.predict returns) for the model
// file.
func libxgboostPredict(t *testing.T, modelFile string, rows []float32, ncol int) []float32 {
	t.Helper()
	b, err := xgb.LoadBooster(modelFile)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	out, _, err := b.PredictDense(rows, len(rows)/ncol, ncol, float32(math.NaN()), xgb.PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testLog writes the deployer's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
