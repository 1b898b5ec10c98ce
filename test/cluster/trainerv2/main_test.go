package trainerv2

import (
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.Options{
		Nodes:     cluster.TwoGPUNodes(),
		TrainerV2: true,
		PodRunner: &podrunner.Options{
			Commands: cluster.GangboostCommands("gangboost-train"),
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
}
