package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a multi-user Kubeflow platform gives a profile namespace, as its profile controller and
// its kubeflow-roles manifests create them.
const (
	// KubeflowEdit is the ClusterRole a profile's default-editor is bound to; it aggregates every
	// ClusterRole labelled AggregateToKubeflowEdit.
	KubeflowEdit = "kubeflow-edit"
	// AggregateToKubeflowEdit is the label kubeflow-edit aggregates by.
	AggregateToKubeflowEdit = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit"
	// DefaultEditor is the service account KFP runs a profile's pipeline steps as.
	DefaultEditor = "default-editor"
	// KubeflowKubernetesEdit is Kubeflow's ClusterRole of core Kubernetes grants aggregated
	// into kubeflow-edit.
	KubeflowKubernetesEdit = "kubeflow-kubernetes-edit"
	// KubeflowEditManifest is gangboost's file of ClusterRoles for KFP's run accounts.
	KubeflowEditManifest = "manifests/kubeflow/aggregate-to-kubeflow-edit.yaml"
)

// KubeflowSecretsRule is kubeflow-kubernetes-edit's read of Secrets (Kubeflow's kubeflow-roles).
var KubeflowSecretsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}

// Profile is a Kubeflow profile namespace on the control plane: the namespace, its
// default-editor service account and the RoleBinding of it to kubeflow-edit, nothing else (no
// gangboost namespace, no gangboost account).
type Profile struct {
	C         *Cluster
	Namespace string
}

// NewProfile creates a profile namespace named prefix-<random> as Kubeflow's profile controller
// does, and kubeflow-edit (with its aggregation rule) when the control plane has none yet. The
// namespace goes at the end of the test.
func (c *Cluster) NewProfile(t testing.TB, prefix string) *Profile {
	t.Helper()
	ctx := context.Background()
	edit := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: KubeflowEdit},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{AggregateToKubeflowEdit: "true"}},
		}},
	}
	// What of Kubeflow's kubeflow-kubernetes-edit (aggregated into kubeflow-edit) the steps rely
	// on: reading the namespace's Secrets, as KFP's launcher reads mlpipeline-minio-artifact.
	kubernetesEdit := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: KubeflowKubernetesEdit, Labels: map[string]string{AggregateToKubeflowEdit: "true"}},
		Rules:      []rbacv1.PolicyRule{KubeflowSecretsRule},
	}
	for _, cr := range []*rbacv1.ClusterRole{edit, kubernetesEdit} {
		if err := c.Client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create ClusterRole %s: %v", cr.Name, err)
		}
	}
	p := &Profile{C: c, Namespace: prefix + "-" + rand.String(5)}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace, Labels: map[string]string{
		"app.kubernetes.io/part-of": "kubeflow-profile", "katib.kubeflow.org/metrics-collector-injection": "enabled",
		"pipelines.kubeflow.org/enabled": "true", "serving.kubeflow.org/inferenceservice": "enabled",
	}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create profile namespace %s: %v", p.Namespace, err)
	}
	t.Cleanup(func() {
		_ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), p.Namespace, metav1.DeleteOptions{})
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultEditor, Namespace: p.Namespace}}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultEditor, Namespace: p.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: KubeflowEdit},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: DefaultEditor, Namespace: p.Namespace}},
	}
	for _, o := range []client.Object{sa, rb} {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s in profile %s: %v", o, o.GetName(), p.Namespace, err)
		}
	}
	return p
}

// ApplyKubeflowEdit applies gangboost's ClusterRoles for KFP's run accounts and waits until
// kube-controller-manager's clusterrole-aggregation controller has copied gangboost-edit's rules
// into kubeflow-edit; it returns how long that took.
func (c *Cluster) ApplyKubeflowEdit(t testing.TB) time.Duration {
	t.Helper()
	objs, err := DecodeFiles(filepath.Join(c.opts.RepoRoot, KubeflowEditManifest))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Apply(context.Background(), c.Client, objs...); err != nil {
		t.Fatalf("apply %s: %v", KubeflowEditManifest, err)
	}
	var want []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetLabels()[AggregateToKubeflowEdit] != "true" {
			continue
		}
		var cr rbacv1.ClusterRole
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: o.GetName()}, &cr); err != nil {
			t.Fatal(err)
		}
		want = append(want, cr.Rules...)
	}
	if len(want) == 0 {
		t.Fatalf("%s has no ClusterRole labelled %s", KubeflowEditManifest, AggregateToKubeflowEdit)
	}
	var got []rbacv1.PolicyRule
	WaitFor(t, 90*time.Second, "kube-controller-manager's clusterrole-aggregation controller copying gangboost-edit's rules into "+KubeflowEdit, func(ctx context.Context) (bool, error) {
		var edit rbacv1.ClusterRole
		if err := c.Client.Get(ctx, client.ObjectKey{Name: KubeflowEdit}, &edit); err != nil {
			return false, err
		}
		got = edit.Rules
		return containsRules(got, append(want, KubeflowSecretsRule)), nil
	})
	return time.Since(start)
}

// RemoveKubeflowEdit deletes gangboost's ClusterRoles and waits until kubeflow-edit no longer
// holds their rules: a profile's default-editor then has only what Kubeflow itself grants.
func (c *Cluster) RemoveKubeflowEdit(t testing.TB) {
	t.Helper()
	objs, err := DecodeFiles(filepath.Join(c.opts.RepoRoot, KubeflowEditManifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	WaitFor(t, 90*time.Second, KubeflowEdit+" emptied of gangboost's rules", func(ctx context.Context) (bool, error) {
		var edit rbacv1.ClusterRole
		if err := c.Client.Get(ctx, client.ObjectKey{Name: KubeflowEdit}, &edit); err != nil {
			return apierrors.IsNotFound(err), nil
		}
		// Kubeflow's own grants (KubeflowSecretsRule) stay.
		for _, r := range edit.Rules {
			if !slices.Equal(r.Resources, KubeflowSecretsRule.Resources) || len(r.APIGroups) != 1 || r.APIGroups[0] != "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// ServiceAccountUser is the user name a service account's token authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
}

// containsRules reports whether every (group, resource, verb) of want is granted by got.
func containsRules(got, want []rbacv1.PolicyRule) bool {
	have := map[string]bool{}
	for _, k := range ruleKeys(got) {
		have[k] = true
	}
	for _, k := range ruleKeys(want) {
		if !have[k] {
			return false
		}
	}
	return true
}

func ruleKeys(rules []rbacv1.PolicyRule) []string {
	var keys []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					keys = append(keys, strings.Join([]string{g, res, v}, " "))
				}
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
