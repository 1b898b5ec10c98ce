package serving

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

func TestMain(m *testing.M) {
	image, err := runtimeImage()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster.Main(m, cluster.Options{
		Nodes:  []cluster.NodeSpec{{Name: "cpu-node-1", CPU: "8", Memory: "32Gi"}},
		KServe: true,
		PodRunner: &podrunner.Options{
			// The runtime image of manifests/clusterservingruntime.yaml has
			// no command in the pod: its entrypoint is gangboost-runtime.
			Images: map[string][]string{image: {"gangboost-runtime"}},
			Commands: map[string]string{
				"gangboost-runtime": filepath.Join(cluster.BinDir(), "gangboost-runtime"),
				// TestPipelineOnCluster's step pods and XGBoostJob.
				"gangboost-train":         filepath.Join(cluster.BinDir(), "gangboost-train"),
				"prepare-data":            filepath.Join(cluster.BinDir(), "prepare-data"),
				"launch-xgboostjob":       filepath.Join(cluster.BinDir(), "launch-xgboostjob"),
				"deploy-inferenceservice": filepath.Join(cluster.BinDir(), "deploy-inferenceservice"),
				"evaluate":                filepath.Join(cluster.BinDir(), "evaluate"),
			},
			PassEnv: []string{"LD_LIBRARY_PATH"},
		},
	})
}
