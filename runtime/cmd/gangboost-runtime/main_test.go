package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/cmdline"
	"github.com/gangboost/gangboost/runtime/server"
)

// --check loads a model folder as serving would and says which file loads, or why none does.
func TestCheckModels(t *testing.T) {
	iris := filepath.Join("..", "..", "testdata", "models", "iris")
	damaged := t.TempDir()
	b, err := os.ReadFile(filepath.Join(iris, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, "model.json"), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		wantOut   string // printed when the folder loads
		wantErr   string // in the error when it does not
	}{
		{"trained model", iris, "model iris: " + filepath.Join(iris, "model.json") + " loads", ""},
		{"folder nothing wrote", filepath.Join(t.TempDir(), "models", "iris", "v1"), "", "models/iris/v1"},
		{"empty folder", t.TempDir(), "", "model iris is not ready"},
		{"damaged model", damaged, "", "load model " + filepath.Join(damaged, "model.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := checkModels(&out, c.dir, "iris", "")
			if c.wantErr == "" {
				if err != nil || !strings.Contains(out.String(), c.wantOut) {
					t.Errorf("checkModels(%s) = %v, printed %q; want %q", c.dir, err, out.String(), c.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("checkModels(%s) = %v, want an error containing %q", c.dir, err, c.wantErr)
			}
		})
	}
	// Through the flags, as the Makefile's check pod runs it.
	if err := run([]string{"--check", "--model_name", "iris", "--model_dir", iris}); err != nil {
		t.Errorf("run --check on the iris model: %v", err)
	}
	if err := run([]string{"--check", "--model_name", "iris", "--model_dir", t.TempDir()}); err == nil {
		t.Error("run --check on an empty folder succeeded")
	}
}

// --request_timeout's help names the time an answer has after it, which the server owns.
func TestRequestTimeoutHelpNamesTheWriteGrace(t *testing.T) {
	fs := cmdline.NewFlagSet(new(cmdline.Values))
	if usage := fs.Lookup("request_timeout").Usage; !strings.Contains(usage, server.WriteGrace.String()+" more") {
		t.Errorf("--request_timeout's help %q does not say the answer's %s", usage, server.WriteGrace)
	}
}

// A limit set to 0, on the command line or in the environment KServe's container may carry,
// stops the runtime before it does anything, naming the flag: 0 does not turn a limit off.
// (--check keeps a runtime that accepted the value from serving on: it would return nil.)
func TestZeroLimitIsRefusedAtStart(t *testing.T) {
	check := []string{"--check", "--model_name", "iris", "--model_dir", filepath.Join("..", "..", "testdata", "models", "iris")}
	if err := run(append(check, "--max_response_values=0")); err == nil ||
		!strings.Contains(err.Error(), "--max_response_values 0: want 1 or more") {
		t.Errorf("--max_response_values=0: %v", err)
	}
	t.Setenv("REQUEST_TIMEOUT", "0s")
	if err := run(check); err == nil || !strings.Contains(err.Error(), "--request_timeout 0s: want more than 0") {
		t.Errorf("REQUEST_TIMEOUT=0s: %v", err)
	}
}
