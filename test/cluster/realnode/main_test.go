package realnode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// images holds the OCI archives scripts/build-images.sh wrote for this run (what make images
// writes to dist/), from the binaries of make build; imagesErr says why there are none.
var (
	images       *cluster.Images
	imagesErr    error
	imageVersion string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gangboost-realnode-images-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if images, imagesErr = cluster.BuildImages(context.Background(), dir); imagesErr == nil {
		imageVersion = images.Version
		fmt.Fprintf(os.Stderr, "realnode: images built in %s\n", images.Took.Round(time.Millisecond))
	}

	before := cluster.HostBaseline()
	// KServe's controller serves the gang's model, Trainer v2 and JobSet run the TrainJob. Tests
	// taint the fake node so that every pod goes to the real node (workloadsOnRealNode), the
	// pipeline's step pods too (cluster.StepPods.RealNode), as in make demo-cluster.
	code := cluster.Run(m, cluster.Options{RealNode: true, KServe: true, TrainerV2: true,
		Nodes: []cluster.NodeSpec{{Name: "fake-node", CPU: "8", Memory: "32Gi"}},
		PodRunner: &podrunner.Options{
			Commands: cluster.GangboostCommands(cluster.ComponentCommands()...),
			PassEnv:  []string{"LD_LIBRARY_PATH"},
		},
	})
	// Stop has run: whatever the real node added to the host must be gone. Other test packages
	// of `go test ./...` change the host meanwhile (test/images mounts an overlay under its own
	// temporary folder) and undo it when they finish: what is still there after their time to
	// do so is the real node's.
	left := before.Added(cluster.SnapshotHost())
	for deadline := time.Now().Add(30 * time.Second); len(left) > 0 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		left = before.Added(cluster.SnapshotHost())
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the real node left on the host after Stop:\n  %s\n", strings.Join(left, "\n  "))
		code = 1
	}
	return code
}

// requireImage is the archive of a gangboost image built for this run.
func requireImage(t *testing.T, name string) string {
	t.Helper()
	if imagesErr != nil {
		t.Fatalf("images: %v", imagesErr)
	}
	return images.Archive(name)
}
