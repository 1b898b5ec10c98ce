// Package launche2e runs the launch-xgboostjob component against the test control plane as KFP
// would: a pod under the component's service account from manifests/rbac, its component.yaml
// command line with an ExecutorInput's placeholders resolved; its job an XGBoostJob (Training
// Operator v1) or, with job_api trainjob, a TrainJob (Kubeflow Trainer v2 and JobSet).
package launche2e

import (
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		Nodes: cluster.TwoGPUNodes(),
		// job_api trainjob: Kubeflow Trainer v2 and JobSet beside the Training Operator.
		TrainerV2: true,
		PodRunner: &podrunner.Options{
			// The component's pod runs launch-xgboostjob; the XGBoostJob's containers run
			// gangboost-train (kube.TrainerCommand).
			Commands: cluster.GangboostCommands("launch-xgboostjob", "gangboost-train"),
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
}
