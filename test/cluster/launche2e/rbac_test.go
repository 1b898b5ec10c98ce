package launche2e

import (
	"time"

	"context"
	"github.com/google/uuid"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRBAC: manifests/rbac grants the component what it uses and nothing else (the launch tests
// prove it is enough by running the component with this service account's token).
func TestRBAC(t *testing.T) {
	e := newEnv(t, "rbac")
	user := "system:serviceaccount:" + e.ns + ":" + serviceAccount
	tests := []struct {
		group, resource, sub, verb string
		allowed                    bool
	}{
		{"kubeflow.org", "xgboostjobs", "", "create", true},
		{"kubeflow.org", "xgboostjobs", "", "get", true},
		{"kubeflow.org", "xgboostjobs", "", "watch", true},
		{"kubeflow.org", "xgboostjobs", "", "delete", true},
		{"kubeflow.org", "xgboostjobs", "", "update", false},
		{"kubeflow.org", "xgboostjobs", "", "patch", false},
		{"kubeflow.org", "pytorchjobs", "", "create", false},
		{"scheduling.volcano.sh", "podgroups", "", "watch", true},
		{"scheduling.volcano.sh", "podgroups", "", "delete", false},
		{"scheduling.volcano.sh", "queues", "", "get", true},
		{"scheduling.volcano.sh", "queues", "", "update", false},
		{"", "nodes", "", "list", true},
		{"", "nodes", "", "patch", false},
		{"", "pods", "", "list", true},
		{"", "pods", "log", "get", true},
		{"", "pods", "", "create", false},
		{"", "pods", "", "delete", false},
		{"", "pods", "exec", "create", false},
		{"", "events", "", "watch", true},
		{"", "persistentvolumeclaims", "", "get", true},
		{"", "persistentvolumeclaims", "", "update", false},
		{"", "persistentvolumeclaims", "", "delete", false},
		{"", "secrets", "", "get", false},
	}
	for _, tc := range tests {
		ra := &authorizationv1.ResourceAttributes{Namespace: e.ns, Group: tc.group, Resource: tc.resource, Subresource: tc.sub, Verb: tc.verb}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: ra}}
		res, err := e.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed != tc.allowed {
			t.Errorf("%s %s.%s/%s in %s: allowed %v, want %v", tc.verb, tc.resource, tc.group, tc.sub, e.ns, res.Status.Allowed, tc.allowed)
		}
	}
	other := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
		Namespace: "default", Group: "kubeflow.org", Resource: "xgboostjobs", Verb: "create"}}}
	res, err := e.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), other, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.Allowed {
		t.Error("the component may create XGBoostJobs outside its namespace")
	}
}

// TestLaunchPodUsesItsServiceAccount: the component's pod talks to the API server as its own
// service account, not as the test's admin: under the namespace's default account, which no Role
// binds, it fails with the API server's refusal and creates nothing.
func TestLaunchPodUsesItsServiceAccount(t *testing.T) {
	e := newEnv(t, "norbac")
	e.serviceAccount = "default"
	s := e.newStep(uuid.NewString(), "train-iris", map[string]any{"model_name": "iris", "workers": 1})
	r := e.runComponent(s, time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	if _, ok := r.firstLine("forbidden", "system:serviceaccount:"+e.ns+":default"); !ok {
		t.Errorf("no line names the refusal of the default service account:\n%s", r.text())
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Errorf("%d XGBoostJobs created without RBAC", len(jobs))
	}
}
