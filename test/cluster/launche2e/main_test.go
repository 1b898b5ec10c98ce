// Package launche2e runs the launch-xgboostjob component against the test control plane as KFP
// would: a pod under the component's service account from manifests/rbac, its component.yaml
// command line with an ExecutorInput's placeholders resolved.
package launche2e

import (
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		// Two nodes with one GPU each.
		Nodes: []cluster.NodeSpec{
			{Name: "gpu-node-1", CPU: "8", Memory: "32Gi", GPUs: 1},
			{Name: "gpu-node-2", CPU: "8", Memory: "32Gi", GPUs: 1},
		},
		PodRunner: &podrunner.Options{
			// The component's pod runs launch-xgboostjob; the XGBoostJob's containers run
			// gangboost-train (kube.TrainerCommand).
			Commands: map[string]string{
				"launch-xgboostjob": filepath.Join(cluster.BinDir(), "launch-xgboostjob"),
				"gangboost-train":   filepath.Join(cluster.BinDir(), "gangboost-train"),
			},
			PassEnv: []string{"LD_LIBRARY_PATH"},
		},
	})
}
