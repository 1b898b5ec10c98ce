package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// KServeNamespace is where KServe's controller, its service account and
	// the inferenceservice-config ConfigMap live (KServe's constant).
	KServeNamespace      = "kserve"
	kserveServiceAccount = "kserve-controller-manager"
	kserveWebhookService = "kserve-webhook-server-service"
	kserveConfigMap      = "inferenceservice-config"
)

// KServeConfigMap is KServe's own inferenceservice-config of the release,
// changed for a cluster without Knative, Istio or Gateway API: the default
// deployment mode is RawDeployment (KServe v0.19 shows it as Standard) and
// no Istio VirtualService is made.
func KServeConfigMap(moduleDir string) (*unstructured.Unstructured, error) {
	path := filepath.Join(moduleDir, "config", "configmap", "inferenceservice.yaml")
	objs, err := DecodeFiles(path)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 || objs[0].GetName() != kserveConfigMap {
		return nil, fmt.Errorf("%s: want the one ConfigMap %s", path, kserveConfigMap)
	}
	cm := objs[0]
	set := func(key string, values map[string]any) error {
		raw, _, err := unstructured.NestedString(cm.Object, "data", key)
		if err != nil || raw == "" {
			return fmt.Errorf("%s: data.%s missing", path, key)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return fmt.Errorf("%s: data.%s: %w", path, key, err)
		}
		for k, v := range values {
			m[k] = v
		}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		return unstructured.SetNestedField(cm.Object, string(b), "data", key)
	}
	if err := set("deploy", map[string]any{"defaultDeploymentMode": "RawDeployment"}); err != nil {
		return nil, err
	}
	if err := set("ingress", map[string]any{"disableIstioVirtualHost": true}); err != nil {
		return nil, err
	}
	return cm, nil
}

// kserveRBAC is KServe's config/rbac for the controller (service account,
// cluster role and binding, leader-election role and binding) placed in the
// kserve namespace, as KServe's config/default kustomization does.
func kserveRBAC(moduleDir string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(moduleDir, "config", "rbac")
	objs, err := DecodeFiles(
		filepath.Join(dir, "service_account.yaml"),
		filepath.Join(dir, "role.yaml"),
		filepath.Join(dir, "role_binding.yaml"),
		filepath.Join(dir, "leader_election_role.yaml"),
		filepath.Join(dir, "leader_election_role_binding.yaml"),
	)
	if err != nil {
		return nil, err
	}
	if err := inNamespace(objs, KServeNamespace); err != nil {
		return nil, err
	}
	return objs, nil
}

// KServeVersion is the KServe release the control plane runs (Options.KServeVersion).
func (c *Cluster) KServeVersion() string { return c.opts.KServeVersion }

// startKServe runs KServe's controller manager (InferenceService,
// TrainedModel and InferenceGraph controllers and every webhook of
// config/webhook) as a local process under its own service account.
//
// What a cluster install does that is done here instead:
//   - the webhook certificates are issued per run for 127.0.0.1 and written
//     where controller-runtime's webhook server reads them,
//     $TMPDIR/k8s-webhook-server/serving-certs (the manager takes no cert
//     flag; a kubelet would mount the Secret there), TMPDIR being a folder
//     of the run;
//   - the webhook configurations call https://127.0.0.1:<port> with the
//     run's CA instead of the Service cert-manager would inject into.
//
// Ready means the validating webhook has denied an invalid InferenceService
// on a dry run.
func (c *Cluster) startKServe(ctx context.Context) error {
	moduleDir, err := ModuleDir(ctx, "github.com/kserve/kserve", c.opts.KServeVersion)
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": KServeNamespace},
	}}
	objs := []*unstructured.Unstructured{ns}
	rbac, err := kserveRBAC(moduleDir)
	if err != nil {
		return err
	}
	objs = append(objs, rbac...)
	cm, err := KServeConfigMap(moduleDir)
	if err != nil {
		return err
	}
	objs = append(objs, cm)

	ps, err := FreePorts(3)
	if err != nil {
		return err
	}
	webhookPort, metricsPort, probePort := ps[0], ps[1], ps[2]
	certs, err := webhookCerts("kserve-webhook-ca", fmt.Sprintf("%s.%s.svc", kserveWebhookService, KServeNamespace))
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, "kserve-tmp")
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for _, k := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, k), certs[k], 0o600); err != nil {
			return err
		}
	}
	hooks, err := DecodeFiles(filepath.Join(moduleDir, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if err := webhookToLoopback(h, webhookPort, certs["ca.crt"]); err != nil {
			return fmt.Errorf("kserve webhook configuration %s: %w", h.GetName(), err)
		}
	}
	objs = append(objs, hooks...)
	if err := Apply(ctx, c.Client, objs...); err != nil {
		return err
	}

	kubeconfig, err := c.saKubeconfig(ctx, KServeNamespace, kserveServiceAccount)
	if err != nil {
		return err
	}
	proc, err := c.start("kserve-manager", c.Binaries[kserveManagers[c.opts.KServeVersion]], []string{
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-addr=127.0.0.1:%d", probePort),
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		"--leader-elect=false",
	}, []string{
		"KUBECONFIG=" + kubeconfig,
		"POD_NAMESPACE=" + KServeNamespace,
		"SECRET_NAME=kserve-webhook-server-cert",
		"TMPDIR=" + tmp,
	})
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
	}); err != nil {
		return err
	}
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		// Valid for the CRD schema, invalid for KServe's validator: an
		// InferenceService name must start with a letter.
		isvc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": "0-webhook-probe", "namespace": "default"},
			"spec": map[string]any{"predictor": map[string]any{
				"containers": []any{map[string]any{"name": "kserve-container", "image": "probe"}},
			}},
		}}
		err := c.Client.Create(ctx, isvc, client.DryRunAll)
		switch {
		case err == nil:
			return fmt.Errorf("KServe's webhook accepted an InferenceService named %q", isvc.GetName())
		case strings.Contains(err.Error(), "denied the request") && strings.Contains(err.Error(), "must start with alphabetical character"):
			return nil
		default:
			return err
		}
	})
}
