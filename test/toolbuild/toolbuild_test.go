package toolbuild

import (
	"os/exec"
	"strings"
	"testing"
)

// The tools compile their packages with make's compiler flags: with any other, a package that the
// product's build compiled with the same module versions would be compiled a second time.
func TestGCFlagsAreMakes(t *testing.T) {
	out, err := exec.Command("bash", "../../scripts/xgboost-flags.sh", "gcflags").Output()
	if err != nil {
		t.Fatalf("scripts/xgboost-flags.sh gcflags: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != GCFlags {
		t.Errorf("scripts/xgboost-flags.sh gcflags = %q, toolbuild.GCFlags = %q: make and the tools must compile with the same flags", got, GCFlags)
	}
}
