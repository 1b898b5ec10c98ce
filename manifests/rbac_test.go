package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// aggregateLabel is the label Kubeflow's kubeflow-edit ClusterRole aggregates by; the profile's
// default-editor is bound to kubeflow-edit.
const aggregateLabel = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit"

// rbacObjects decodes the RBAC objects of a manifest file by kind and name.
func rbacObjects(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := YAMLDocs(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	objs := map[string]any{}
	for _, doc := range docs {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj any
		switch u.GetKind() {
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s %s: %v", file, u.GetName(), err)
		}
		objs[u.GetKind()+"/"+u.GetName()] = obj
	}
	return objs
}

// grants flattens rules into "group resource verb" lines, sorted and without duplicates.
func grants(rules ...[]rbacv1.PolicyRule) []string {
	var out []string
	for _, rs := range rules {
		for _, r := range rs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, g+" "+res+" "+v)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Kubeflow's run account (a profile's default-editor, through kubeflow-edit) gets exactly what the
// components' own Roles grant: gangboost-edit is aggregated by Kubeflow's label and holds the union
// of launch-xgboostjob's and deploy-inferenceservice's rules, and the queue reader is the same
// ClusterRole as launch-xgboostjob.yaml's.
func TestKubeflowEditAggregatesTheComponentsRoles(t *testing.T) {
	kf := rbacObjects(t, "kubeflow/aggregate-to-kubeflow-edit.yaml")
	edit, ok := kf["ClusterRole/gangboost-edit"].(*rbacv1.ClusterRole)
	if !ok {
		t.Fatal("kubeflow/aggregate-to-kubeflow-edit.yaml has no ClusterRole gangboost-edit")
	}
	if edit.Labels[aggregateLabel] != "true" {
		t.Errorf("gangboost-edit labels %v, want %s: \"true\" (what kubeflow-edit aggregates)", edit.Labels, aggregateLabel)
	}
	launch := rbacObjects(t, "rbac/launch-xgboostjob.yaml")
	deploy := rbacObjects(t, "rbac/deploy-inferenceservice.yaml")
	want := grants(launch["Role/launch-xgboostjob"].(*rbacv1.Role).Rules, deploy["Role/deploy-inferenceservice"].(*rbacv1.Role).Rules)
	if got := grants(edit.Rules); !slices.Equal(got, want) {
		t.Errorf("gangboost-edit grants\n  %s\nthe components' Roles\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	qr, ok := kf["ClusterRole/gangboost-queue-reader"].(*rbacv1.ClusterRole)
	if !ok {
		t.Fatal("kubeflow/aggregate-to-kubeflow-edit.yaml has no ClusterRole gangboost-queue-reader")
	}
	if got, want := grants(qr.Rules), grants(launch["ClusterRole/gangboost-queue-reader"].(*rbacv1.ClusterRole).Rules); !slices.Equal(got, want) {
		t.Errorf("kubeflow's gangboost-queue-reader grants %q, rbac/launch-xgboostjob.yaml's %q", got, want)
	}
	// Cluster-scoped resources in an aggregated role are granted by no namespace's RoleBinding:
	// they belong in the queue reader, bound by a ClusterRoleBinding.
	for _, g := range grants(edit.Rules) {
		if res := strings.Fields(g)[1]; res == "nodes" || res == "queues" {
			t.Errorf("gangboost-edit grants %q: cluster-scoped, ineffective through default-editor's RoleBinding", g)
		}
	}
}

// Standalone KFP runs every step in namespace kubeflow as pipeline-runner: standalone.yaml binds
// both roles to that account there.
func TestStandaloneKFPBindsPipelineRunner(t *testing.T) {
	objs := rbacObjects(t, "kubeflow/standalone.yaml")
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: "pipeline-runner", Namespace: "kubeflow"}
	rb, ok := objs["RoleBinding/gangboost-edit-pipeline-runner"].(*rbacv1.RoleBinding)
	if !ok || rb.Namespace != "kubeflow" || rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != "gangboost-edit" || !slices.Equal(rb.Subjects, []rbacv1.Subject{want}) {
		t.Errorf("standalone.yaml: want a RoleBinding in kubeflow of ClusterRole gangboost-edit to kubeflow:pipeline-runner, got %+v", rb)
	}
	crb, ok := objs["ClusterRoleBinding/gangboost-queue-reader-kubeflow-pipeline-runner"].(*rbacv1.ClusterRoleBinding)
	if !ok || crb.RoleRef.Name != "gangboost-queue-reader" || !slices.Equal(crb.Subjects, []rbacv1.Subject{want}) {
		t.Errorf("standalone.yaml: want a ClusterRoleBinding of gangboost-queue-reader to kubeflow:pipeline-runner, got %+v", crb)
	}
}

// Nothing a user applies into their namespace names one: not the claim, not the
// InferenceServices, not a binding's subject (a RoleBinding's ServiceAccount subject without a
// namespace is the binding's own namespace's account). Only standalone.yaml names kubeflow, the
// namespace standalone KFP always runs in.
func TestManifestsNameNoNamespace(t *testing.T) {
	var files []string
	for _, glob := range []string{"*.yaml", "rbac/*.yaml", "kubeflow/*.yaml", "contention/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, file := range files {
		if filepath.Base(file) == Kustomization || file == "kubeflow/standalone.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := YAMLDocs(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, doc := range docs {
			var u unstructured.Unstructured
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if u.GetKind() == "Namespace" {
				t.Errorf("%s: creates Namespace %s", file, u.GetName())
			}
			if ns := u.GetNamespace(); ns != "" {
				t.Errorf("%s: %s %s in namespace %q", file, u.GetKind(), u.GetName(), ns)
			}
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				if ns, _ := s.(map[string]any)["namespace"].(string); ns != "" {
					t.Errorf("%s: %s %s binds a subject in namespace %q", file, u.GetKind(), u.GetName(), ns)
				}
			}
		}
	}
}

// scripts/in-namespace.sh renders the components' own accounts into the user's namespace: every
// object and every binding's subject, ClusterRoleBindings' included (which kustomize's plain
// namespace field leaves alone).
func TestInNamespaceRendersEverySubject(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl (its built-in kustomize renders the manifests) is not installed")
	}
	out, err := exec.Command("../scripts/in-namespace.sh", "team-a").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/in-namespace.sh team-a: %v\n%s", err, out)
	}
	docs, err := YAMLDocs(out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, doc := range docs {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		kinds[u.GetKind()]++
		if scoped := u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding"; scoped && u.GetNamespace() != "team-a" {
			t.Errorf("%s %s in namespace %q, want team-a", u.GetKind(), u.GetName(), u.GetNamespace())
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			if ns, _ := s.(map[string]any)["namespace"].(string); ns != "team-a" {
				t.Errorf("%s %s: subject %v, want namespace team-a", u.GetKind(), u.GetName(), s)
			}
		}
	}
	for _, kind := range []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		if kinds[kind] == 0 {
			t.Errorf("the rendering has no %s: %v", kind, kinds)
		}
	}
	if bad, err := exec.Command("../scripts/in-namespace.sh", "Team_A").CombinedOutput(); err == nil || !strings.Contains(string(bad), "DNS-1123") {
		t.Errorf("scripts/in-namespace.sh Team_A: err %v, output %s; want a refusal naming DNS-1123", err, bad)
	}
}
