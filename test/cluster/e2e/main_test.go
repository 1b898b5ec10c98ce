package e2e

import (
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		// Two nodes with one GPU each, as in Volcano's GPU gang demo.
		Nodes: []cluster.NodeSpec{
			{Name: "gpu-node-1", CPU: "8", Memory: "32Gi", GPUs: 1},
			{Name: "gpu-node-2", CPU: "8", Memory: "32Gi", GPUs: 1},
		},
		PodRunner: &podrunner.Options{
			Commands: map[string]string{"gangboost-train": filepath.Join(cluster.BinDir(), "gangboost-train")},
			// Blocker and placeholder pods run sleep.
			AllowHostCommands: true,
			PassEnv:           []string{"LD_LIBRARY_PATH"},
		},
	})
}
