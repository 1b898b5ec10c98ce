// Package launche2e runs the launch-xgboostjob component against the test control plane: as a
// local process with its service account's token and an ExecutorInput, as KFP would run it.
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
			// The XGBoostJob's containers run gangboost-train (kube.TrainerCommand).
			Commands: map[string]string{"gangboost-train": filepath.Join(cluster.BinDir(), "gangboost-train")},
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
}
