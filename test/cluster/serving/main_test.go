package serving

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// binDir is where `make build` puts the binaries: $GANGBOOST_BIN_DIR, else
// <repo>/bin.
func binDir() string {
	if d := os.Getenv("GANGBOOST_BIN_DIR"); d != "" {
		return d
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return "bin"
	}
	return filepath.Join(root, "bin")
}

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
			Images:   map[string][]string{image: {"gangboost-runtime"}},
			Commands: map[string]string{"gangboost-runtime": filepath.Join(binDir(), "gangboost-runtime")},
		},
	})
}
