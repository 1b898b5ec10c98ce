package cluster

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kserve/kserve/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestKServeConfig renders what startKServe applies from KServe's own
// config: the ConfigMap KServe's manager reads at start, in RawDeployment
// mode without Istio, and its RBAC bound in the kserve namespace.
func TestKServeConfig(t *testing.T) {
	dir, err := ModuleDir(context.Background(), "github.com/kserve/kserve", KServeVersion)
	if err != nil {
		t.Fatal(err)
	}
	u, err := KServeConfigMap(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetNamespace() != KServeNamespace {
		t.Errorf("ConfigMap namespace %q, want %q", u.GetNamespace(), KServeNamespace)
	}
	var cm corev1.ConfigMap
	convert(t, u, &cm)
	// The keys KServe's manager parses at start (v1beta1.NewDeployConfig, NewIngressConfig),
	// read by their JSON names.
	var deploy struct {
		DefaultDeploymentMode string `json:"defaultDeploymentMode"`
	}
	if err := json.Unmarshal([]byte(cm.Data["deploy"]), &deploy); err != nil {
		t.Fatalf("deploy = %q: %v", cm.Data["deploy"], err)
	}
	// v0.19 and later read the RawDeployment of earlier releases as Standard.
	if deploy.DefaultDeploymentMode != string(constants.Standard) && deploy.DefaultDeploymentMode != string(constants.LegacyRawDeployment) {
		t.Errorf("defaultDeploymentMode = %q, want %s", deploy.DefaultDeploymentMode, constants.Standard)
	}
	var ingress struct {
		DisableIstioVirtualHost bool `json:"disableIstioVirtualHost"`
	}
	if err := json.Unmarshal([]byte(cm.Data["ingress"]), &ingress); err != nil {
		t.Fatalf("ingress = %q: %v", cm.Data["ingress"], err)
	}
	if !ingress.DisableIstioVirtualHost {
		t.Error("disableIstioVirtualHost is false")
	}
	// The other keys stay KServe's.
	var storage map[string]any
	if err := json.Unmarshal([]byte(cm.Data["storageInitializer"]), &storage); err != nil || storage["image"] == nil {
		t.Errorf("storageInitializer = %q: %v", cm.Data["storageInitializer"], err)
	}

	objs, err := kserveRBAC(dir)
	if err != nil {
		t.Fatal(err)
	}
	sa := findObject(objs, "ServiceAccount", kserveServiceAccount)
	if sa == nil || sa.GetNamespace() != KServeNamespace {
		t.Fatalf("service account %s not in namespace %s: %v", kserveServiceAccount, KServeNamespace, sa)
	}
	crb := findObject(objs, "ClusterRoleBinding", "kserve-manager-rolebinding")
	if crb == nil {
		t.Fatal("no ClusterRoleBinding kserve-manager-rolebinding")
	}
	var binding rbacv1.ClusterRoleBinding
	convert(t, crb, &binding)
	if len(binding.Subjects) != 1 || binding.Subjects[0].Namespace != KServeNamespace || binding.Subjects[0].Name != kserveServiceAccount {
		t.Errorf("ClusterRoleBinding subjects = %+v, want the service account in %s", binding.Subjects, KServeNamespace)
	}
	if findObject(objs, "ClusterRole", "kserve-manager-role") == nil {
		t.Error("no ClusterRole kserve-manager-role")
	}
}
