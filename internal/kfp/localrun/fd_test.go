package localrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chainPackage is a pipeline of n tasks in a row, each running `true` (a step that prints nothing
// and writes no outputs).
func chainPackage(t *testing.T, n int) *Package {
	t.Helper()
	var b strings.Builder
	b.WriteString("components:\n  comp-noop:\n    executorLabel: exec-noop\n")
	b.WriteString("deploymentSpec:\n  executors:\n    exec-noop:\n      container:\n        command:\n        - 'true'\n        image: example.com/noop:1\n")
	b.WriteString("pipelineInfo:\n  name: chain\nroot:\n  dag:\n    tasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "      t%04d:\n        componentRef:\n          name: comp-noop\n        taskInfo:\n          name: t%04d\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        dependentTasks:\n        - t%04d\n", i-1)
		}
	}
	b.WriteString("schemaVersion: 2.1.0\nsdkVersion: kfp-2.14.3\n")
	p, err := ParsePackage([]byte(b.String()))
	if err != nil {
		t.Fatalf("chain package: %v\n%s", err, b.String())
	}
	return p
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A run holds no file descriptor per finished step: a long pipeline must not run out of them
// (the default limit of 1,024 would end a run of 1,200 steps near step 1,000).
func TestLongRunHoldsNoDescriptorPerStep(t *testing.T) {
	const steps = 150
	bin := t.TempDir()
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) on PATH")
	}
	if err := os.Symlink(truePath, filepath.Join(bin, "true")); err != nil {
		t.Fatal(err)
	}
	pkg := chainPackage(t, steps)
	var peak int
	before := openFDs(t)
	start := time.Now()
	res, err := Run(context.Background(), Options{Package: pkg, WorkDir: t.TempDir(), BinDir: bin, Out: io.Discard, Grace: time.Second,
		Finished: func(*Result) { peak = openFDs(t) }})
	if err != nil {
		t.Fatalf("run of %d steps: %v", steps, err)
	}
	t.Logf("%d steps in %s; open file descriptors: %d before, %d as the run finished, %d after",
		len(res.Tasks), time.Since(start).Round(time.Millisecond), before, peak, openFDs(t))
	// A few descriptors may come and go with the runtime (the poller); one per step may not.
	if peak > before+steps/10 {
		t.Errorf("open file descriptors grew from %d to %d over a run of %d steps", before, peak, steps)
	}
}
