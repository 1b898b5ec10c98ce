package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestBuildOncePerProcess(t *testing.T) {
	a := Built(t, "./internal/kfp/localrun/testdata/kfpstep", "CGO_ENABLED=0")
	b := Built(t, "./internal/kfp/localrun/testdata/kfpstep", "CGO_ENABLED=0")
	if a != b {
		t.Errorf("the second Build built again: %s, then %s", a, b)
	}
	if filepath.Base(a) != "kfpstep" {
		t.Errorf("binary %s is not named after its package", a)
	}
	if err := exec.Command(a, "--help").Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Errorf("run %s: %v", a, err)
		}
	}
}

func TestBuildErrorNamesThePackage(t *testing.T) {
	_, err := Build("./no/such/package")
	if err == nil || !strings.Contains(err.Error(), "./no/such/package") {
		t.Errorf("Build of a missing package: %v", err)
	}
}

func TestRootHoldsTheModule(t *testing.T) {
	if _, err := os.Stat(filepath.Join(Root(t), "go.mod")); err != nil {
		t.Error(err)
	}
}
