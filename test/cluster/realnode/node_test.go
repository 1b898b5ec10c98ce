package realnode

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/test/cluster"
)

func TestRealNodeReady(t *testing.T) {
	c := cluster.Require(t)
	if c.RealNode() == "" {
		t.Fatal("the control plane has no real node")
	}
	t.Logf("real node Ready %s after the kubelet started; control plane %s", c.RealNodeReady(), c.Timings.ControlPlane)
	for name, pid := range c.RealNodePIDs() {
		t.Logf("%s RSS %d MiB", name, rssKiB(pid)/1024)
	}
}

// rssKiB is a process's resident set size (VmRSS) in KiB.
func rssKiB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
