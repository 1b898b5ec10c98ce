package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// binDir is where `make build` puts gangboost-train: $GANGBOOST_BIN_DIR,
// else <repo>/bin.
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
	cluster.Main(m, cluster.Options{
		// Two nodes with one GPU each, as in Volcano's GPU gang demo.
		Nodes: []cluster.NodeSpec{
			{Name: "gpu-node-1", CPU: "8", Memory: "32Gi", GPUs: 1},
			{Name: "gpu-node-2", CPU: "8", Memory: "32Gi", GPUs: 1},
		},
		PodRunner: &podrunner.Options{
			Commands: map[string]string{"gangboost-train": filepath.Join(binDir(), "gangboost-train")},
			// Blocker and placeholder pods run sleep.
			AllowHostCommands: true,
			PassEnv:           []string{"LD_LIBRARY_PATH"},
		},
	})
}
