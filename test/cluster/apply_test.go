package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestInNamespace: namespaced objects and the ServiceAccount subjects of bindings move to the
// namespace, as a kustomization's namespace field moves them; cluster-scoped objects and other
// subjects stay as they are.
func TestInNamespace(t *testing.T) {
	objs, err := DecodeYAML([]byte(`
apiVersion: v1
kind: ServiceAccount
metadata: {name: controller, namespace: system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: manager-role}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: manager-rolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manager-role}
subjects:
- {kind: ServiceAccount, name: controller, namespace: system}
- {kind: User, name: alice}
---
apiVersion: v1
kind: Namespace
metadata: {name: system}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := inNamespace(objs, "kserve"); err != nil {
		t.Fatal(err)
	}
	wantNamespace := map[string]string{"ServiceAccount": "kserve", "ClusterRole": "", "ClusterRoleBinding": "",
		"Namespace": "", "CustomResourceDefinition": ""}
	for _, o := range objs {
		if got := o.GetNamespace(); got != wantNamespace[o.GetKind()] {
			t.Errorf("%s %s: namespace %q, want %q", o.GetKind(), o.GetName(), got, wantNamespace[o.GetKind()])
		}
	}
	subjects, _, _ := unstructured.NestedSlice(objs[2].Object, "subjects")
	if len(subjects) != 2 {
		t.Fatalf("subjects %v, want the two the binding had", subjects)
	}
	if ns := subjects[0].(map[string]any)["namespace"]; ns != "kserve" {
		t.Errorf("ServiceAccount subject in namespace %v, want kserve", ns)
	}
	if ns, set := subjects[1].(map[string]any)["namespace"]; set {
		t.Errorf("User subject given namespace %v, want none", ns)
	}
}
