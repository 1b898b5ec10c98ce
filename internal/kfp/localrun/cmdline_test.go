package localrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewOptions: the package is read and checked, the overrides parsed; a malformed --param is
// a usage error, a package that cannot be read is not.
func TestNewOptions(t *testing.T) {
	o, err := NewOptions("testdata/tiny-pipeline.yaml", []string{"text=a=b", "score=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Package == nil || o.Package.Spec.GetRoot().GetDag() == nil {
		t.Errorf("no package read: %+v", o.Package)
	}
	if len(o.Params) != 2 || o.Params["text"] != "a=b" || o.Params["score"] != "0.5" {
		t.Errorf("params %v", o.Params)
	}

	var usage *UsageError
	for _, params := range [][]string{{"text"}, {"=x"}, {"a=1", "a=2"}} {
		_, err := NewOptions("testdata/tiny-pipeline.yaml", params)
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--param") {
			t.Errorf("%q: %v, want a usage error naming --param", params, err)
		}
	}
	_, err = NewOptions("testdata/missing.yaml", []string{"text"})
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &usage) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v, want a not-found error naming the file, not a usage error", err)
	}
	// A component file has no root DAG: refused when read, before the overrides.
	_, err = NewOptions("testdata/kfpstep/main.go", nil)
	if err == nil || errors.As(err, &usage) {
		t.Errorf("not a pipeline package: %v", err)
	}
}

func TestParseClaimDirs(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseClaimDirs([]string{"models=pvc/m", "data=/srv/data", "eq=/a=b"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"models": filepath.Join(cwd, "pvc", "m"), "data": "/srv/data", "eq": "/a=b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, err := ParseClaimDirs(nil); err != nil || len(got) != 0 {
		t.Errorf("no pairs: %v %v", got, err)
	}
	var usage *UsageError
	for _, kv := range []string{"models", "=dir", "models="} {
		_, err := ParseClaimDirs([]string{"ok=/x", kv})
		if !errors.As(err, &usage) || err.Error() != fmt.Sprintf("--claim-dir %q: want claim=DIR", kv) {
			t.Errorf("%q: %v", kv, err)
		}
	}
}

// TestProgramDir: the test binary's own folder, as the kernel knows it.
func TestProgramDir(t *testing.T) {
	dir, err := ProgramDir()
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.EvalSymlinks("/proc/self/exe")
	if err != nil {
		t.Skipf("no /proc/self/exe: %v", err)
	}
	if dir != filepath.Dir(self) {
		t.Errorf("ProgramDir() = %s, want %s", dir, filepath.Dir(self))
	}
}

func TestExitStatus(t *testing.T) {
	res := &Result{Report: "/run/report.html", Tasks: []*TaskResult{{Name: "train", LogFile: "/run/train.log"}}}
	stepFailed := fmt.Errorf("run: %w", &StepError{Task: "train", ExitCode: 3, Err: errors.New("exit status 3")})
	badOutputs := &StepError{Task: "train", Err: errors.New("output model_uri not written")}
	for _, tt := range []struct {
		name    string
		res     *Result
		err     error
		backend string
		code    int
		message string
	}{
		{"success", res, nil, BackendLocal, 0, ""},
		{"interrupted here", res, fmt.Errorf("task train: %w", ErrInterrupted), BackendLocal, 130,
			"interrupted; every process the run started is stopped, the training gang's too"},
		{"interrupted with the default backend", nil, ErrInterrupted, "", 130,
			"interrupted; every process the run started is stopped, the training gang's too"},
		{"interrupted on a cluster", res, ErrInterrupted, BackendKubernetes, 130,
			"interrupted; every process the run started here is stopped, but what its steps created on the cluster (an XGBoostJob, an InferenceService) keeps running: delete it with kubectl if it is not wanted"},
		{"step exit code", res, stepFailed, BackendLocal, 3,
			"run: task train failed: exit status 3\n  log: /run/train.log\n  report: /run/report.html"},
		{"step exited 0 with wrong outputs", res, badOutputs, BackendLocal, 1,
			"task train failed: output model_uri not written\n  log: /run/train.log\n  report: /run/report.html"},
		{"step error without a result", nil, badOutputs, BackendLocal, 1, "task train failed: output model_uri not written"},
		{"step not in the result", &Result{Report: "/r.html"}, badOutputs, BackendLocal, 1,
			"task train failed: output model_uri not written\n  log: \n  report: /r.html"},
		{"usage error", nil, &UsageError{Err: errors.New(`--param "x": want name=value`)}, BackendLocal, 2, `--param "x": want name=value`},
		{"other error", nil, errors.New(`backend "k8s": want local or kubernetes`), "k8s", 1, `backend "k8s": want local or kubernetes`},
	} {
		code, message := ExitStatus(tt.res, tt.err, tt.backend)
		if code != tt.code || message != tt.message {
			t.Errorf("%s: ExitStatus = %d %q, want %d %q", tt.name, code, message, tt.code, tt.message)
		}
	}
}
