package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	// TrainerModule and TrainerVersion are the Kubeflow Trainer v2 release
	// whose controller manager, CRDs, RBAC and webhooks Options.TrainerV2
	// runs.
	TrainerModule  = "github.com/kubeflow/trainer/v2"
	TrainerVersion = "v2.2.0"
	// JobSetModule and JobSetVersion are the JobSet release Trainer
	// v2.2.0's go.mod requires; Trainer v2 runs every TrainJob as a JobSet.
	JobSetModule  = "sigs.k8s.io/jobset"
	JobSetVersion = "v0.11.1"
	// TrainerNamespace is where Trainer's manifests put its controller.
	TrainerNamespace      = "kubeflow-system"
	trainerServiceAccount = "kubeflow-trainer-controller-manager"
	trainerService        = "kubeflow-trainer-controller-manager"
	// JobSetNamespace and the names below are JobSet's config/default
	// (namespace jobset-system, name prefix jobset-).
	JobSetNamespace      = "jobset-system"
	jobSetServiceAccount = "jobset-controller-manager"
	jobSetService        = "jobset-webhook-service"
)

// startJobSet runs the JobSet controller (JobSet and pod controllers, the
// JobSet and pod webhooks) under its own service account, with
// config/default of its module: CRD, RBAC and webhook configurations are
// applied, the Deployment's part is done here. Its internal cert manager is
// off: the certificates are issued per run for 127.0.0.1 and the webhook
// configurations call https://127.0.0.1:<port> (no Service network).
func (c *Cluster) startJobSet(ctx context.Context) error {
	moduleDir, err := ModuleDir(ctx, JobSetModule, JobSetVersion)
	if err != nil {
		return err
	}
	rendered, err := Kustomize(ctx, filepath.Join(moduleDir, "config", "default"))
	if err != nil {
		return err
	}
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ps[0], ps[1]
	certs, err := webhookCerts("jobset-webhook-ca", fmt.Sprintf("%s.%s.svc", jobSetService, JobSetNamespace))
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, o := range rendered {
		switch o.GetKind() {
		case "Deployment", "Service", "Secret", "ConfigMap":
			// The process runs here; the manager's config is written below.
			continue
		case "CustomResourceDefinition":
			// config/default adds a conversion webhook through the Service;
			// the CRD has one version, so nothing is ever converted.
			unstructured.RemoveNestedField(o.Object, "spec", "conversion")
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			if err := webhookToLoopback(o, webhookPort, certs["ca.crt"]); err != nil {
				return fmt.Errorf("jobset webhook configuration %s: %w", o.GetName(), err)
			}
		}
		objs = append(objs, o)
	}
	if err := Apply(ctx, c.Client, objs...); err != nil {
		return err
	}
	certDir := filepath.Join(c.Dir, "jobset-certs")
	if err := writeCerts(certDir, certs); err != nil {
		return err
	}
	conf := map[string]any{
		"apiVersion":             "config.jobset.x-k8s.io/v1alpha1",
		"kind":                   "Configuration",
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
		"webhook":                map[string]any{"port": webhookPort, "host": "127.0.0.1", "certDir": certDir},
		"health":                 map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", probePort)},
	}
	confPath, err := c.writeConfig("jobset-config.yaml", conf)
	if err != nil {
		return err
	}
	kubeconfig, err := c.saKubeconfig(ctx, JobSetNamespace, jobSetServiceAccount)
	if err != nil {
		return err
	}
	proc, err := c.start("jobset-controller", c.Binaries["jobset-controller"], []string{
		"--config=" + confPath,
		// The metrics endpoint is not used by the tests.
		"--metrics-bind-address=0",
	}, []string{"KUBECONFIG=" + kubeconfig})
	if err != nil {
		return err
	}
	return waitReady(ctx, proc, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
	})
}

// startTrainer runs the Kubeflow Trainer v2 controller manager (TrainJob,
// TrainingRuntime and ClusterTrainingRuntime controllers and webhooks) under
// its own service account, with its module's manifests/base CRDs, RBAC and
// webhook configurations. Its cert management is off (certManagement.enable:
// false in its config file): the certificates are issued per run for
// 127.0.0.1 and written where controller-runtime's webhook server reads them,
// $TMPDIR/k8s-webhook-server/serving-certs, TMPDIR being a folder of the run.
// No ClusterTrainingRuntime is installed: tests apply the ones they use.
//
// Ready means the TrainJob webhooks (defaulter, then validator) have denied
// a dry-run TrainJob whose runtime does not exist.
func (c *Cluster) startTrainer(ctx context.Context) error {
	moduleDir, err := ModuleDir(ctx, TrainerModule, TrainerVersion)
	if err != nil {
		return err
	}
	base := filepath.Join(moduleDir, "manifests", "base")
	crds, err := Kustomize(ctx, filepath.Join(base, "crds"))
	if err != nil {
		return err
	}
	rbac, err := Kustomize(ctx, filepath.Join(base, "rbac"))
	if err != nil {
		return err
	}
	if err := inNamespace(rbac, TrainerNamespace); err != nil {
		return err
	}
	hooks, err := Kustomize(ctx, filepath.Join(base, "webhook"))
	if err != nil {
		return err
	}
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ps[0], ps[1]
	certs, err := webhookCerts("kubeflow-trainer-webhook-ca", fmt.Sprintf("%s.%s.svc", trainerService, TrainerNamespace))
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if err := webhookToLoopback(h, webhookPort, certs["ca.crt"]); err != nil {
			return fmt.Errorf("trainer webhook configuration %s: %w", h.GetName(), err)
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": TrainerNamespace},
	}}
	objs := append([]*unstructured.Unstructured{ns}, crds...)
	objs = append(objs, rbac...)
	objs = append(objs, hooks...)
	if err := Apply(ctx, c.Client, objs...); err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, "trainer-tmp")
	if err := writeCerts(filepath.Join(tmp, "k8s-webhook-server", "serving-certs"), certs); err != nil {
		return err
	}
	conf := map[string]any{
		"apiVersion": "config.trainer.kubeflow.org/v1alpha1",
		"kind":       "Configuration",
		"health": map[string]any{
			"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", probePort),
			"readinessEndpointName":  "readyz",
			"livenessEndpointName":   "healthz",
		},
		// The metrics endpoint is not used by the tests.
		"metrics":        map[string]any{"bindAddress": "0"},
		"webhook":        map[string]any{"port": webhookPort, "host": "127.0.0.1"},
		"leaderElection": map[string]any{"leaderElect": false},
		"certManagement": map[string]any{"enable": false},
	}
	confPath, err := c.writeConfig("trainer-config.yaml", conf)
	if err != nil {
		return err
	}
	kubeconfig, err := c.saKubeconfig(ctx, TrainerNamespace, trainerServiceAccount)
	if err != nil {
		return err
	}
	proc, err := c.start("trainer-controller-manager", c.Binaries["trainer-controller-manager"], []string{
		"--config=" + confPath,
	}, []string{"KUBECONFIG=" + kubeconfig, "TMPDIR=" + tmp})
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
	}); err != nil {
		return err
	}
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "trainer.kubeflow.org/v1alpha1",
			"kind":       "TrainJob",
			"metadata":   map[string]any{"name": "webhook-probe", "namespace": "default"},
			"spec": map[string]any{"runtimeRef": map[string]any{
				"name": "webhook-probe-missing-runtime", "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org",
			}},
		}}
		err := c.Client.Create(ctx, job, client.DryRunAll)
		switch {
		case err == nil:
			return fmt.Errorf("Trainer's webhook accepted a TrainJob whose ClusterTrainingRuntime does not exist")
		case strings.Contains(err.Error(), "denied the request"):
			return nil
		default:
			return err
		}
	})
}

// writeCerts writes a webhook server's tls.crt and tls.key into dir.
func writeCerts(dir string, certs map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, k := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, k), certs[k], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeConfig writes a component's configuration file into the run folder.
func (c *Cluster) writeConfig(name string, conf map[string]any) (string, error) {
	b, err := yaml.Marshal(conf)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, name)
	return path, os.WriteFile(path, b, 0o644)
}

// TrainJobCondition returns the status and message of a TrainJob's condition
// (Complete, Failed, Suspended), "" when absent.
func TrainJobCondition(job *unstructured.Unstructured, condType string) (metav1.ConditionStatus, string) {
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, cnd := range conds {
		m, _ := cnd.(map[string]any)
		if m["type"] == condType {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return metav1.ConditionStatus(s), msg
		}
	}
	return "", ""
}
