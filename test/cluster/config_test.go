package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/plumbing/ci"
	"github.com/gangboost/gangboost/test/testbin"
)

func requireKubectl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		if ci.Running() {
			t.Fatalf("kubectl (kustomize) not found: %v", err)
		}
		t.Skipf("kubectl (kustomize) not found: %v", err)
	}
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// TestRenderOperatorConfig renders operator-config/training-operator over
// the upstream v1.9.4 manifests and checks what the overlay adds.
func TestRenderOperatorConfig(t *testing.T) {
	requireKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := RenderOperatorConfig(ctx, testbin.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.Deployment.Namespace != operatorNamespace {
		t.Errorf("deployment namespace = %q, want %q", m.Deployment.Namespace, operatorNamespace)
	}
	c, err := m.Container()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Args, "--gang-scheduler-name=volcano") {
		t.Errorf("training-operator args = %q, want --gang-scheduler-name=volcano", c.Args)
	}
	rules := map[string][]string{} // "group/resource" -> verbs granted to the operator's service account
	for _, o := range m.Objects {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding
		convert(t, o, &b)
		bound := false
		for _, s := range b.Subjects {
			bound = bound || (s.Kind == "ServiceAccount" && s.Name == operatorServiceAccount && s.Namespace == operatorNamespace)
		}
		if !bound {
			continue
		}
		ro := findObject(m.Objects, "ClusterRole", b.RoleRef.Name)
		if ro == nil {
			t.Fatalf("ClusterRoleBinding %s: ClusterRole %s not rendered", b.Name, b.RoleRef.Name)
		}
		var role rbacv1.ClusterRole
		convert(t, ro, &role)
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					rules[g+"/"+res] = append(rules[g+"/"+res], r.Verbs...)
				}
			}
		}
	}
	need := map[string][]string{
		"scheduling.volcano.sh/podgroups":   {"get", "list", "watch", "create", "update", "patch", "delete"},
		"scheduling.volcano.sh/queues":      {"get", "list", "watch"},
		"scheduling.k8s.io/priorityclasses": {"get", "list", "watch"},
	}
	for res, verbs := range need {
		for _, v := range verbs {
			if !slices.Contains(rules[res], v) {
				t.Errorf("service account %s/%s lacks %s on %s (has %v)", operatorNamespace, operatorServiceAccount, v, res, rules[res])
			}
		}
	}
	if findObject(m.Objects, "Secret", operatorWebhookSecret) == nil {
		t.Errorf("no Secret %s (the webhook certificates' home)", operatorWebhookSecret)
	}
	if findObject(m.Objects, "ValidatingWebhookConfiguration", operatorWebhookConfig) == nil {
		t.Errorf("no ValidatingWebhookConfiguration %s", operatorWebhookConfig)
	}
	if findObject(m.Objects, "CustomResourceDefinition", "xgboostjobs.kubeflow.org") == nil {
		t.Error("no CRD xgboostjobs.kubeflow.org")
	}
}

// TestRenderVolcanoConfig checks operator-config/volcano: the scheduler's
// actions and plugins, the training queue and the priority classes.
func TestRenderVolcanoConfig(t *testing.T) {
	requireKubectl(t)
	vc, err := RenderVolcanoConfig(context.Background(), testbin.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Actions string `json:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name string `json:"name"`
			} `json:"plugins"`
		} `json:"tiers"`
	}
	if err := yaml.Unmarshal([]byte(vc.SchedulerConf), &conf); err != nil {
		t.Fatalf("%s: %v", SchedulerConfKey, err)
	}
	var actions []string
	for _, a := range strings.Split(conf.Actions, ",") {
		actions = append(actions, strings.TrimSpace(a))
	}
	if want := []string{"enqueue", "allocate", "backfill"}; !slices.Equal(actions, want) {
		t.Errorf("actions = %q, want %q", actions, want)
	}
	var plugins []string
	for _, tier := range conf.Tiers {
		for _, p := range tier.Plugins {
			plugins = append(plugins, p.Name)
		}
	}
	for _, p := range []string{"gang", "priority", "conformance", "drf", "predicates", "proportion", "nodeorder", "binpack"} {
		if !slices.Contains(plugins, p) {
			t.Errorf("plugin %s missing from %s (have %v)", p, SchedulerConfKey, plugins)
		}
	}

	qo := findObject(vc.Objects, "Queue", "ml-training")
	if qo == nil {
		t.Fatal("no Queue ml-training")
	}
	var q schedulingv1beta1.Queue
	convert(t, qo, &q)
	if q.Spec.Weight <= 0 {
		t.Errorf("queue ml-training weight = %d, want > 0", q.Spec.Weight)
	}
	if q.Spec.Reclaimable == nil || !*q.Spec.Reclaimable {
		t.Errorf("queue ml-training reclaimable = %v, want true", q.Spec.Reclaimable)
	}
	if gpu := q.Spec.Capability["nvidia.com/gpu"]; gpu.Cmp(resource.MustParse("1")) < 0 {
		t.Errorf("queue ml-training capability nvidia.com/gpu = %s, want >= 1", gpu.String())
	}

	prio := map[string]int32{}
	for _, o := range vc.Objects {
		if o.GetKind() == "PriorityClass" {
			var pc schedulingv1.PriorityClass
			convert(t, o, &pc)
			prio[pc.Name] = pc.Value
		}
	}
	train, okT := prio["gangboost-training"]
	serve, okS := prio["gangboost-serving"]
	if !okT || !okS || serve <= train {
		t.Errorf("priority classes = %v, want gangboost-serving above gangboost-training", prio)
	}
}

// TestExistingInstallOverlays renders what make install-volcano and make
// configure-training-operator apply to a cluster that already runs Volcano and
// the Training Operator: only gangboost's own cluster-scoped objects, nothing
// that replaces an upstream component (Deployment, ConfigMap, Namespace, CRD,
// webhook), and no remote base (they render without a network).
func TestExistingInstallOverlays(t *testing.T) {
	requireKubectl(t)
	allowed := map[string]bool{"Queue": true, "PriorityClass": true, "ClusterRole": true, "ClusterRoleBinding": true}
	for _, dir := range []string{"volcano", ExistingOperatorOverlay} {
		root := filepath.Join(testbin.Root(t), "operator-config", dir)
		kust, err := os.ReadFile(filepath.Join(root, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(remoteBasePattern).Match(kust) || strings.Contains(string(kust), "github.com") {
			t.Errorf("operator-config/%s fetches a remote base when applied", dir)
		}
		objs, err := Kustomize(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, o := range objs {
			kinds = append(kinds, o.GetKind()+"/"+o.GetName())
			if !allowed[o.GetKind()] {
				t.Errorf("operator-config/%s renders %s %s/%s, which would replace an existing install's", dir, o.GetKind(), o.GetNamespace(), o.GetName())
			}
		}
		if len(objs) == 0 {
			t.Errorf("operator-config/%s renders nothing", dir)
		}
		t.Logf("operator-config/%s: %v", dir, kinds)
	}
	// The fresh-cluster Volcano settings are the same objects plus the
	// scheduler ConfigMap: install-volcano leaves that one to Volcano's install.
	vc, err := RenderVolcanoConfig(context.Background(), testbin.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	if findObject(vc.Objects, "Queue", "ml-training") == nil || findObject(vc.Objects, "ConfigMap", SchedulerConfigMap) == nil {
		t.Error("operator-config/volcano-full lacks the queue or the scheduler ConfigMap")
	}
}

func TestWebhookToLoopback(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{
		"kind": "ValidatingWebhookConfiguration",
		"webhooks": []any{
			map[string]any{"name": "a", "clientConfig": map[string]any{"service": map[string]any{"name": "s", "namespace": "n", "path": "/validate-a"}}},
			map[string]any{"name": "b", "clientConfig": map[string]any{"service": map[string]any{"name": "s", "namespace": "n", "path": "/validate-b"}}},
		},
	}}
	if err := webhookToLoopback(o, 9443, []byte("CA")); err != nil {
		t.Fatal(err)
	}
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	for i, want := range []string{"https://127.0.0.1:9443/validate-a", "https://127.0.0.1:9443/validate-b"} {
		url, _, _ := unstructured.NestedString(hooks[i].(map[string]any), "clientConfig", "url")
		if url != want {
			t.Errorf("webhook %d url = %q, want %q", i, url, want)
		}
		if _, found, _ := unstructured.NestedMap(hooks[i].(map[string]any), "clientConfig", "service"); found {
			t.Errorf("webhook %d still has clientConfig.service", i)
		}
	}
	// DeepCopy panics on values that are not JSON types: the caBundle must
	// be a base64 string.
	_ = o.DeepCopy()
}

func TestArgsWithout(t *testing.T) {
	got := argsWithout([]string{"--gang-scheduler-name=volcano", "--leader-elect", "--webhook-server-port=9443", "--metrics-bind-address=:8080", "--namespace=x"},
		"webhook-server-port", "metrics-bind-address", "leader-elect")
	want := []string{"--gang-scheduler-name=volcano", "--namespace=x"}
	if !slices.Equal(got, want) {
		t.Errorf("argsWithout = %q, want %q", got, want)
	}
}

// TestWebhookCerts checks the certificates pass the checks of the
// operator's cert rotator (it would otherwise replace them with ones not
// valid for 127.0.0.1): the CA verifies as its own CAName, the serving
// certificate for the Service DNS name and for 127.0.0.1, both 90 days
// ahead, keys in PKCS#1.
func TestWebhookCerts(t *testing.T) {
	dns := "training-operator.kubeflow.svc"
	certs, err := webhookCerts("training-operator-ca", dns)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(name string) *x509.Certificate {
		b, _ := pem.Decode(certs[name])
		if b == nil {
			t.Fatalf("%s: no PEM block", name)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}
	ca, srv := parse("ca.crt"), parse("tls.crt")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	at := time.Now().Add(90 * 24 * time.Hour)
	if _, err := ca.Verify(x509.VerifyOptions{DNSName: "training-operator-ca", Roots: pool, CurrentTime: at}); err != nil {
		t.Errorf("CA does not verify as training-operator-ca: %v", err)
	}
	for _, name := range []string{dns, "127.0.0.1"} {
		if _, err := srv.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: at}); err != nil {
			t.Errorf("serving certificate does not verify for %s: %v", name, err)
		}
	}
	for _, k := range []string{"ca.key", "tls.key"} {
		b, _ := pem.Decode(certs[k])
		if b == nil || b.Type != "RSA PRIVATE KEY" {
			t.Errorf("%s: want an RSA PRIVATE KEY (PKCS#1) block", k)
			continue
		}
		if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if _, err := tls.X509KeyPair(certs["tls.crt"], certs["tls.key"]); err != nil {
		t.Errorf("tls.crt/tls.key do not pair: %v", err)
	}
}

func TestWebhookCertsValid(t *testing.T) {
	certs, err := webhookCerts("training-operator-ca", "training-operator.kubeflow.svc")
	if err != nil {
		t.Fatal(err)
	}
	if !webhookCertsValid(certs, "training-operator-ca", "training-operator.kubeflow.svc") {
		t.Error("fresh certificates rejected")
	}
	if webhookCertsValid(certs, "training-operator-ca", "other.kubeflow.svc") {
		t.Error("certificates accepted for a DNS name they do not carry")
	}
	broken := map[string][]byte{}
	for k, v := range certs {
		broken[k] = v
	}
	broken["tls.key"] = certs["ca.key"]
	if webhookCertsValid(broken, "training-operator-ca", "training-operator.kubeflow.svc") {
		t.Error("certificate with a foreign key accepted")
	}
}
