package protocoltest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPython is Debian's interpreter, for which python3-requests, -numpy and -xgboost are
// installed, whatever python3 comes first on PATH.
const debianPython = "/usr/bin/python3"

func TestKServeStylePythonClient(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import requests, numpy, xgboost").Run(); err != nil {
		t.Fatalf("%s cannot import requests, numpy and xgboost (apt-get install python3-requests python3-xgboost): %v", debianPython, err)
	}
	for _, c := range []struct{ name, dir, file, nfeat string }{
		{"iris", "iris", "model.json", "4"},
		{"binary", "binary", "model.ubj", "6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(modelsDir(), c.dir)
			s := start(t, "--model_name", c.name, "--model_dir", dir)
			out, err := exec.Command(debianPython, filepath.Join(root, "runtime", "testdata", "kserve_client.py"),
				s.URL, c.name, filepath.Join(dir, c.file), c.nfeat).CombinedOutput()
			if err != nil {
				t.Fatalf("client failed: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "ok "); n != 5 {
				t.Fatalf("%d checks passed, want 5:\n%s", n, out)
			}
		})
	}
}

// TestKServeClientCompatibility sends what KServe's own Python client sends to xgbserver (a
// pandas DataFrame as one input per column, binary and JSON; V1 under "inputs"; GET /) and
// checks each answer against xgboost's Booster.predict.
func TestKServeClientCompatibility(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import requests, numpy, xgboost").Run(); err != nil {
		t.Fatalf("%s cannot import requests, numpy and xgboost (apt-get install python3-requests python3-xgboost): %v", debianPython, err)
	}
	for _, c := range []struct{ name, dir, file, names string }{
		{"iris", "iris", "model.json", "sepal_length,sepal_width,petal_length,petal_width"},
		{"binary", "binary", "model.ubj", "f0,f1,f2,f3,f4,f5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(modelsDir(), c.dir)
			s := start(t, "--model_name", c.name, "--model_dir", dir)
			out, err := exec.Command(debianPython, filepath.Join(root, "runtime", "testdata", "kserve_compat.py"),
				s.URL, c.name, filepath.Join(dir, c.file), c.names).CombinedOutput()
			if err != nil {
				t.Fatalf("client failed: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "ok "); n != 5 {
				t.Fatalf("%d checks passed, want 5:\n%s", n, out)
			}
		})
	}
}
