package serving

import (
	"context"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/test/cluster"
)

// TestPipelineInKubeflowProfile runs the package as a multi-user Kubeflow platform runs it: in a
// profile namespace, every step as the profile's default-editor, whose only grants come from
// Kubeflow's kubeflow-edit ClusterRole. First without gangboost's roles, where launch-xgboostjob is
// refused and says what to apply; then with manifests/kubeflow applied, whose gangboost-edit
// kube-controller-manager's clusterrole-aggregation controller folds into kubeflow-edit, where the
// whole package runs (gang-scheduled job, InferenceService, evaluation) with nothing else: no
// gangboost namespace, no account or Role of gangboost's in the profile.
func TestPipelineInKubeflowProfile(t *testing.T) {
	c := cluster.Require(t)
	c.RemoveKubeflowEdit(t) // what an earlier run of this binary left
	profile := c.NewProfile(t, "team")
	e := deployEnvIn(t, profile.Namespace)
	removeRunObjects(t, e)

	// Refused: kubeflow-edit aggregates nothing of gangboost's yet.
	_, res, _, output, err := runPackage(t, e, cluster.DefaultEditor)
	if err == nil {
		t.Fatalf("the package ran as %s without gangboost's roles:\n%s", cluster.DefaultEditor, output)
	}
	if res == nil {
		t.Fatalf("no run result: %v", err)
	}
	if task := res.Task("prepare-data"); task == nil || task.State != localrun.StateSucceeded {
		t.Errorf("prepare-data (no API calls) did not succeed without the roles: %+v", task)
	}
	user := cluster.ServiceAccountUser(profile.Namespace, cluster.DefaultEditor)
	for _, want := range []string{"forbidden", user, "gangboost-edit", "kubeflow-edit"} {
		if !strings.Contains(output, want) {
			t.Errorf("the refused launch's output lacks %q:\n%s", want, output)
		}
	}
	var jobs kubeflowv1.XGBoostJobList
	if err := c.Client.List(context.Background(), &jobs, client.InNamespace(profile.Namespace)); err != nil || len(jobs.Items) != 0 {
		t.Errorf("XGBoostJobs in %s after the refusal: %d (%v), want none", profile.Namespace, len(jobs.Items), err)
	}

	// Granted: what manifests/kubeflow adds, through the aggregation.
	took := c.ApplyKubeflowEdit(t)
	t.Logf("kubeflow-edit aggregated gangboost-edit %s after the apply", took.Round(1e6))
	t.Cleanup(func() { c.RemoveKubeflowEdit(t) })
	checkPackageRun(t, e, cluster.DefaultEditor)
}
