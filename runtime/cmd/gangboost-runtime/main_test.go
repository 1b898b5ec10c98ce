package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// --enable_batching stands alone as the boolean flag it was, and takes true, false or auto.
func TestEnableBatchingValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want batchingMode
	}{
		{nil, batchingOff},
		{[]string{"--enable_batching"}, batchingOn},
		{[]string{"--enable_batching=true"}, batchingOn},
		{[]string{"--enable_batching=false"}, batchingOff},
		{[]string{"--enable_batching=auto"}, batchingAuto},
		{[]string{"--enable_batching=auto", "--enable_batching=false"}, batchingOff}, // an InferenceService's args after the runtime's
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		b := batchingOff
		fs.Var(&b, "enable_batching", "")
		if err := fs.Parse(c.args); err != nil || b != c.want {
			t.Errorf("%q: %q, %v; want %q", c.args, b, err, c.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	b := batchingOff
	fs.Var(&b, "enable_batching", "")
	if err := fs.Parse([]string{"--enable_batching=maybe"}); err == nil || !strings.Contains(err.Error(), "want true, false or auto") {
		t.Errorf("--enable_batching=maybe: %v; want an error naming the values", err)
	}
}
