// Package launche2e runs the launch-xgboostjob component against the test control plane as KFP
// would: a pod under the component's service account from manifests/rbac, its component.yaml
// command line with an ExecutorInput's placeholders resolved.
package launche2e

import (
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		Nodes: cluster.TwoGPUNodes(),
		PodRunner: &podrunner.Options{
			// The component's pod runs launch-xgboostjob; the XGBoostJob's containers run
			// gangboost-train (kube.TrainerCommand).
			Commands: cluster.GangboostCommands("launch-xgboostjob", "gangboost-train"),
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
}
