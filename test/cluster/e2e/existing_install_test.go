package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/testbin"
)

const gangFlag = "--gang-scheduler-name=volcano"

// upstreamOperator is a training operator Deployment shaped like an existing install's: a sidecar
// before the operator container, and the operator's own args. No replicas: only its spec matters.
func upstreamOperator(ns, name string, args []string) *appsv1.Deployment {
	zero := int32(0)
	labels := map[string]string{"control-plane": "kubeflow-training-operator"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "training-operator",
					Containers: []corev1.Container{
						{Name: "kube-rbac-proxy", Image: "quay.io/brancz/kube-rbac-proxy:v0.18.0", Args: []string{"--secure-listen-address=0.0.0.0:8443"}},
						{Name: "training-operator", Image: "kubeflow/training-operator:v1-855e096", Command: []string{"/manager"}, Args: args},
					},
				},
			},
		},
	}
}

// configureOperator runs scripts/configure-training-operator.sh (what make
// configure-training-operator runs) with kubectl against the control plane.
func configureOperator(t *testing.T, c *cluster.Cluster, ns, name string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(testbin.Root(t), "scripts", "configure-training-operator.sh"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECTL=kubectl",
		"TRAINING_OPERATOR_NAMESPACE="+ns, "TRAINING_OPERATOR_DEPLOYMENT="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("configure-training-operator.sh on %s/%s: %v\n%s", ns, name, err, out)
	}
	return string(out)
}

// TestConfigureExistingOperator patches Deployments like an existing install's, twice each: the
// flag is there exactly once, every other argument and the sidecar are kept, another gang
// scheduler is replaced, and the second run does not write the Deployment.
func TestConfigureExistingOperator(t *testing.T) {
	c := cluster.Require(t)
	ctx := context.Background()
	ns := "existing-operator-" + rand.String(5)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	kept := []string{"--zap-log-level=info", "--enable-scheme=xgboostjob", "--enable-scheme=pytorchjob", "--webhook-server-port", "9443"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"with-args", kept, append(slices.Clone(kept), gangFlag)},
		{"no-args", nil, []string{gangFlag}},
		{"other-scheduler", append(slices.Clone(kept), "--gang-scheduler-name=scheduler-plugins"), append(slices.Clone(kept), gangFlag)},
		{"separate-value", []string{"--gang-scheduler-name", "scheduler-plugins", "--zap-log-level=info"}, []string{"--gang-scheduler-name", "volcano", "--zap-log-level=info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, upstreamOperator(ns, tc.name, tc.args), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			first := configureOperator(t, c, ns, tc.name)
			d1, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			second := configureOperator(t, c, ns, tc.name)
			d2, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := d2.Spec.Template.Spec.Containers[1].Args
			if !slices.Equal(got, tc.want) {
				t.Errorf("operator args after two runs = %q, want %q\nfirst run: %s\nsecond run: %s", got, tc.want, first, second)
			}
			if sidecar := d2.Spec.Template.Spec.Containers[0]; !slices.Equal(sidecar.Args, d.Spec.Template.Spec.Containers[0].Args) {
				t.Errorf("sidecar args = %q, changed", sidecar.Args)
			}
			// The generation counts spec writes (the deployment controller's status updates do not).
			if d1.Generation != d.Generation+1 || d2.Generation != d1.Generation {
				t.Errorf("spec generations %d -> %d (first run) -> %d (second run), want one write: %s%s", d.Generation, d1.Generation, d2.Generation, first, second)
			}
			if !strings.Contains(second, "already set") {
				t.Errorf("second run says %q, want it to say the flag is already set", second)
			}
			t.Logf("args %q -> %q", tc.args, got)
		})
	}
}

// TestExistingInstallKeepsVolcanoConfig applies what make install-volcano and make
// configure-training-operator apply with kubectl: Volcano's scheduler ConfigMap in volcano-system
// is not written, and gangboost's queue, priority classes and the operator's RBAC are there.
func TestExistingInstallKeepsVolcanoConfig(t *testing.T) {
	c := cluster.Require(t)
	ctx := context.Background()
	before, err := c.Kube.CoreV1().ConfigMaps(cluster.VolcanoNamespace).Get(ctx, cluster.SchedulerConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the control plane's Volcano ConfigMap: %v", err)
	}
	for _, dir := range []string{"volcano", cluster.ExistingOperatorOverlay} {
		// --force-conflicts: the control plane applied the same objects at its start under its own
		// field manager, and server-side apply reports PriorityClass.globalDefault (false, omitted
		// when stored) as a conflict between the two; on a cluster kubectl is their one manager.
		cmd := exec.Command("kubectl", "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(testbin.Root(t), "operator-config", dir))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl apply -k operator-config/%s: %v\n%s", dir, err, out)
		}
		t.Logf("operator-config/%s:\n%s", dir, out)
	}
	after, err := c.Kube.CoreV1().ConfigMaps(cluster.VolcanoNamespace).Get(ctx, cluster.SchedulerConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Data[cluster.SchedulerConfKey] != before.Data[cluster.SchedulerConfKey] {
		t.Errorf("%s/%s written by the existing-install overlays (resourceVersion %s -> %s)",
			cluster.VolcanoNamespace, cluster.SchedulerConfigMap, before.ResourceVersion, after.ResourceVersion)
	}
	var q schedulingv1beta1.Queue
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "ml-training"}, &q); err != nil {
		t.Errorf("queue ml-training: %v", err)
	}
	for _, pc := range []string{"gangboost-training", "gangboost-serving"} {
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Get(ctx, pc, metav1.GetOptions{}); err != nil {
			t.Errorf("priority class %s: %v", pc, err)
		}
	}
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Get(ctx, "training-operator-volcano", metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRoleBinding training-operator-volcano: %v", err)
	}
}
