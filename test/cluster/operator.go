package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const (
	// TrainingOperatorModule and TrainingOperatorVersion are the release
	// whose binary and manifests the tests run (operator-config pins the
	// same ref).
	TrainingOperatorModule  = "github.com/kubeflow/training-operator"
	TrainingOperatorVersion = "v1.9.4"
	// FullOperatorOverlay is the operator-config folder of the fresh-cluster
	// install; ExistingOperatorOverlay the one applied to an existing install.
	FullOperatorOverlay     = "training-operator-full"
	ExistingOperatorOverlay = "training-operator"
	// remoteBasePattern matches the upstream base in
	// operator-config/training-operator-full/kustomization.yaml.
	remoteBasePattern = `github\.com/kubeflow/training-operator(\.git)?//?manifests/overlays/standalone\?ref=(v[0-9.]+)`
)

// OperatorManifests is operator-config/training-operator-full rendered over the
// upstream manifests of the pinned release.
type OperatorManifests struct {
	// Objects are all rendered objects except the Deployment.
	Objects []*unstructured.Unstructured
	// Deployment runs the operator in a real cluster; tests run its
	// container's command line as a local process.
	Deployment *appsv1.Deployment
}

// Container is the operator container of the Deployment.
func (m *OperatorManifests) Container() (*corev1.Container, error) {
	for i := range m.Deployment.Spec.Template.Spec.Containers {
		c := &m.Deployment.Spec.Template.Spec.Containers[i]
		if c.Name == "training-operator" {
			return c, nil
		}
	}
	return nil, fmt.Errorf("deployment %s: no container named training-operator", m.Deployment.Name)
}

// RenderOperatorConfig renders operator-config/training-operator-full of
// repoRoot (the fresh-cluster install, which includes the existing-install
// overlay operator-config/training-operator) with `kubectl kustomize`, after
// pointing its remote base at the same release in the Go module cache (tests
// do not fetch from GitHub). Every other file is used as it is.
func RenderOperatorConfig(ctx context.Context, repoRoot string) (*OperatorManifests, error) {
	overlay := filepath.Join(repoRoot, "operator-config", FullOperatorOverlay)
	kust, err := os.ReadFile(filepath.Join(overlay, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(remoteBasePattern)
	m := re.FindSubmatch(kust)
	if m == nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: no remote base matching %s", overlay, remoteBasePattern)
	}
	if ref := string(m[2]); ref != TrainingOperatorVersion {
		return nil, fmt.Errorf("%s/kustomization.yaml: base ref %s, tests run training operator %s: keep them equal", overlay, ref, TrainingOperatorVersion)
	}
	modDir, err := ModuleDir(ctx, TrainingOperatorModule, TrainingOperatorVersion)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gangboost-operator-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kustomize refuses files outside the kustomization root, so
	// operator-config (the overlay and the folders it refers to) and the
	// upstream manifests are copied side by side.
	if err := copyTree(filepath.Join(modDir, "manifests"), filepath.Join(tmp, "upstream")); err != nil {
		return nil, err
	}
	if err := copyTree(filepath.Dir(overlay), filepath.Join(tmp, "operator-config")); err != nil {
		return nil, err
	}
	local := re.ReplaceAll(kust, []byte("../../upstream/overlays/standalone"))
	localOverlay := filepath.Join(tmp, "operator-config", FullOperatorOverlay)
	if err := os.WriteFile(filepath.Join(localOverlay, "kustomization.yaml"), local, 0o644); err != nil {
		return nil, err
	}
	objs, err := Kustomize(ctx, localOverlay)
	if err != nil {
		return nil, err
	}
	out := &OperatorManifests{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			out.Objects = append(out.Objects, o)
			continue
		}
		if out.Deployment != nil {
			return nil, fmt.Errorf("operator-config renders two Deployments: %s and %s", out.Deployment.Name, o.GetName())
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", o.GetName(), err)
		}
		out.Deployment = &d
	}
	if out.Deployment == nil {
		return nil, fmt.Errorf("operator-config renders no Deployment")
	}
	return out, nil
}

// copyTree copies a folder; files of the module cache are read-only, the
// copies are writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// resolveEnv turns the container's env into KEY=value pairs for a local
// process, filling the Downward API fields a Deployment's pod would get.
func resolveEnv(env []corev1.EnvVar, namespace, podName string) ([]string, error) {
	var out []string
	for _, e := range env {
		v := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("env %s: only fieldRef is supported for the operator", e.Name)
			}
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.namespace":
				v = namespace
			case "metadata.name":
				v = podName
			default:
				return nil, fmt.Errorf("env %s: fieldRef %s not supported", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// webhookToLoopback rewrites a ValidatingWebhookConfiguration so the API
// server calls the operator on 127.0.0.1:port instead of through its
// Service: a test control plane has no Service network (no kube-proxy).
func webhookToLoopback(o *unstructured.Unstructured, port int, caBundle []byte) error {
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, h := range hooks {
		hm := h.(map[string]any)
		path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
		if path == "" {
			return fmt.Errorf("webhook %v: no clientConfig.service.path", hm["name"])
		}
		hm["clientConfig"] = map[string]any{
			"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
			"caBundle": base64.StdEncoding.EncodeToString(caBundle),
		}
		hooks[i] = hm
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}

// argsWithout drops flags the test must set itself (listen addresses) from
// the Deployment's args, so the ones appended later are the only ones.
func argsWithout(args []string, flags ...string) []string {
	var out []string
next:
	for _, a := range args {
		for _, f := range flags {
			if a == "--"+f || strings.HasPrefix(a, "--"+f+"=") {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// yamlString is for error messages showing an object.
func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

const (
	operatorNamespace      = "kubeflow"
	operatorWebhookSecret  = "training-operator-webhook-cert"
	operatorWebhookConfig  = "validator.training-operator.kubeflow.org"
	operatorService        = "training-operator"
	operatorServiceAccount = "training-operator"
)

// startTrainingOperator renders operator-config/training-operator, applies
// everything but the Deployment, and runs the Deployment's container command
// line as a local process under the operator's service account.
//
// Quirks of v1.9.x (v1.9.0 to v1.9.4) handled here:
//   - its cert rotator only updates the webhook Secret (which the manifests
//     create empty); it keeps certificates it finds valid, so the Secret is
//     filled with certificates that also name 127.0.0.1;
//   - the rotator does not write certificate files: it waits for the
//     kubelet to mount the Secret at its fixed cert dir
//     /tmp/k8s-webhook-server/serving-certs, so the test writes them there
//     (one folder for all control planes on the machine, so every run uses
//     the same certificates, kept in the tools cache); the webhook server
//     reads that folder only if TMPDIR is /tmp (controller-runtime uses
//     os.TempDir());
//   - the webhook configuration points at a Service; without a Service
//     network the API server is pointed at 127.0.0.1 instead.
func (c *Cluster) startTrainingOperator(ctx context.Context, p *pki) error {
	m, err := RenderOperatorConfig(ctx, c.opts.RepoRoot)
	if err != nil {
		return err
	}
	c.OperatorManifests = m
	container, err := m.Container()
	if err != nil {
		return err
	}
	ps, err := FreePorts(3)
	if err != nil {
		return err
	}
	webhookPort, metricsPort, probePort := ps[0], ps[1], ps[2]
	certs, err := sharedWebhookCerts("training-operator-ca", fmt.Sprintf("%s.%s.svc", operatorService, operatorNamespace))
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, o := range m.Objects {
		o = o.DeepCopy()
		switch {
		case o.GetKind() == "Secret" && o.GetName() == operatorWebhookSecret:
			data := map[string]any{}
			for k, v := range certs {
				data[k] = base64.StdEncoding.EncodeToString(v)
			}
			o.Object["data"] = data
		case o.GetKind() == "ValidatingWebhookConfiguration":
			if err := webhookToLoopback(o, webhookPort, certs["ca.crt"]); err != nil {
				return fmt.Errorf("webhook configuration %s: %w", o.GetName(), err)
			}
		}
		objs = append(objs, o)
	}
	if err := Apply(ctx, c.Client, objs...); err != nil {
		return err
	}
	if err := mountSecretVolumes(m.Deployment, container, operatorWebhookSecret, certs); err != nil {
		return err
	}
	kubeconfig, err := c.saKubeconfig(ctx, m.Deployment.Namespace, m.Deployment.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	env, err := resolveEnv(container.Env, m.Deployment.Namespace, m.Deployment.Name+"-local")
	if err != nil {
		return err
	}
	env = append(env, "KUBECONFIG="+kubeconfig, "TMPDIR=/tmp")
	c.OperatorArgs = append([]string(nil), container.Args...)
	args := argsWithout(container.Args, "metrics-bind-address", "health-probe-bind-address", "webhook-server-port", "leader-elect")
	args = append(args,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		fmt.Sprintf("--webhook-server-port=%d", webhookPort),
		"--leader-elect=false",
	)
	proc, err := c.start("training-operator", c.Binaries["training-operator"], args, env)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
	}); err != nil {
		return err
	}
	// Ready means the manager runs; the webhook serves only once the
	// rotator has written the certificates. A dry-run create of an invalid
	// job must come back with the webhook's own denial.
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		job := &kubeflowv1.XGBoostJob{
			ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: "default"},
			Spec: kubeflowv1.XGBoostJobSpec{XGBReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
				// Valid for the CRD schema, invalid for the webhook: the
				// container must be named xgboost.
				kubeflowv1.XGBoostJobReplicaTypeMaster: {Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "probe", Image: "probe"}},
				}}},
			}},
		}
		err := c.Client.Create(ctx, job, client.DryRunAll)
		switch {
		case err == nil:
			return fmt.Errorf("webhook accepted an XGBoostJob without an xgboost container")
		case strings.Contains(err.Error(), "denied the request") && strings.Contains(err.Error(), kubeflowv1.XGBoostJobDefaultContainerName):
			return nil
		default:
			return err
		}
	})
}

// mountSecretVolumes does the kubelet's part for the webhook Secret: its
// keys become files under the container's mount path.
func mountSecretVolumes(d *appsv1.Deployment, c *corev1.Container, secret string, data map[string][]byte) error {
	mounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.Secret == nil || v.Secret.SecretName != secret {
				continue
			}
			if err := os.MkdirAll(vm.MountPath, 0o755); err != nil {
				return err
			}
			for k, b := range data {
				if err := os.WriteFile(filepath.Join(vm.MountPath, k), b, 0o600); err != nil {
					return err
				}
			}
			mounted = true
		}
	}
	if !mounted {
		return fmt.Errorf("deployment %s: container %s mounts no volume of Secret %s (the webhook certificates)", d.Name, c.Name, secret)
	}
	return nil
}

// sharedWebhookCerts returns the webhook certificates kept in the tools
// cache, creating them once. The operator's cert dir is a fixed path, so
// control planes running at the same time on one machine (two test
// packages) must serve the same certificates or one API server would reject
// the other's webhook.
func sharedWebhookCerts(caName, dnsName string) (map[string][]byte, error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "webhook-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := lockFile(filepath.Join(cache, ".webhook-certs.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	names := []string{"ca.crt", "ca.key", "tls.crt", "tls.key"}
	certs := map[string][]byte{}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			certs[n] = b
		}
	}
	if len(certs) == len(names) && webhookCertsValid(certs, caName, dnsName) {
		return certs, nil
	}
	if certs, err = webhookCerts(caName, dnsName); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), certs[n], 0o600); err != nil {
			return nil, err
		}
	}
	return certs, nil
}

// webhookCertsValid applies the cert rotator's own checks (90 days ahead)
// plus 127.0.0.1.
func webhookCertsValid(certs map[string][]byte, caName, dnsName string) bool {
	b, _ := pem.Decode(certs["ca.crt"])
	if b == nil {
		return false
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return false
	}
	if b, _ = pem.Decode(certs["tls.crt"]); b == nil {
		return false
	}
	srv, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return false
	}
	if _, err := tls.X509KeyPair(certs["tls.crt"], certs["tls.key"]); err != nil {
		return false
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	at := time.Now().Add(90 * 24 * time.Hour)
	for _, v := range []struct {
		c    *x509.Certificate
		name string
	}{{ca, caName}, {srv, dnsName}, {srv, "127.0.0.1"}} {
		if _, err := v.c.Verify(x509.VerifyOptions{DNSName: v.name, Roots: pool, CurrentTime: at}); err != nil {
			return false
		}
	}
	return true
}
