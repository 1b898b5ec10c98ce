package serving

import (
	"fmt"
	"os"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// KServeVersionEnv names the KServe release the tier runs against (empty: cluster.KServeVersion).
const KServeVersionEnv = "GANGBOOST_KSERVE_VERSION"

func TestMain(m *testing.M) {
	image, err := runtimeImage()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster.Main(m, cluster.Options{
		Nodes:  []cluster.NodeSpec{{Name: "cpu-node-1", CPU: "8", Memory: "32Gi"}},
		KServe: true,
		// make test runs the tier a second time on Kubeflow 1.11's KServe
		// (cluster.KServeKubeflowVersion).
		KServeVersion: os.Getenv(KServeVersionEnv),
		PodRunner: &podrunner.Options{
			// The runtime image of manifests/clusterservingruntime.yaml has
			// no command in the pod: its entrypoint is gangboost-runtime.
			Images: map[string][]string{image: {"gangboost-runtime"}},
			// The runtime, and TestPipelineOnCluster's step pods and XGBoostJob.
			Commands: cluster.GangboostCommands(append([]string{"gangboost-runtime", "gangboost-train"}, cluster.ComponentCommands()...)...),
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
}
