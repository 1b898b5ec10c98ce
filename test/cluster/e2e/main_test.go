package e2e

import (
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		Nodes: cluster.TwoGPUNodes(),
		// TestChallengerRefusedOnKServeWithoutCanary changes the InferenceService CRD.
		KServeAPI: true,
		PodRunner: &podrunner.Options{
			Commands: cluster.GangboostCommands("gangboost-train"),
			// Blocker and placeholder pods run sleep.
			AllowHostCommands: true,
			PassEnv:           []string{"LD_LIBRARY_PATH"},
		},
	})
}
