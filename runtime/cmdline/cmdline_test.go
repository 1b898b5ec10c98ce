package cmdline

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// --enable_batching stands alone as the boolean flag it was, and takes true, false or auto.
func TestEnableBatchingValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want BatchingMode
	}{
		{nil, BatchingOff},
		{[]string{"--enable_batching"}, BatchingOn},
		{[]string{"--enable_batching=true"}, BatchingOn},
		{[]string{"--enable_batching=false"}, BatchingOff},
		{[]string{"--enable_batching=auto"}, BatchingAuto},
		{[]string{"--enable_batching=auto", "--enable_batching=false"}, BatchingOff}, // an InferenceService's args after the runtime's
	} {
		v, err := Parse(c.args, nil, io.Discard)
		if err != nil || v.Batching != c.want {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
			continue
		}
	}
	if _, err := Parse([]string{"--enable_batching=maybe"}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "want true, false or auto") {
		t.Errorf("--enable_batching=maybe: %v; want an error naming the values", err)
	}
}

// A flag on the command line wins over its environment variable, which wins over the default;
// a value the runtime cannot serve with is refused naming the flag.
func TestParse(t *testing.T) {
	env := map[string]string{"MODEL_NAME": "iris", "HTTP_PORT": "9000", "LOG_LEVEL": "debug"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	v, err := Parse([]string{"--http_port=8088", "--request_timeout", "3s"}, lookup, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if v.ModelName != "iris" || v.HTTPPort != 8088 || v.LogLevel != slog.LevelDebug || v.RequestTimeout != 3*time.Second ||
		v.ModelDir != "/mnt/models" || v.GRPCPort != 8081 || v.Batching != BatchingOff {
		t.Errorf("parsed %+v", v)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http_port=70000"}, "--http_port 70000: want a port"},
		{[]string{"--max_batch_rows=-1"}, "--max_batch_rows -1: want 1 or more"},
		{[]string{"--request_timeout=-1s"}, "--request_timeout -1s: want more than 0"},
		// A limit is not turned off by 0: it would leave what it bounds unbounded.
		{[]string{"--max_body_bytes=0"}, "--max_body_bytes 0: want 1 or more"},
		{[]string{"--max_batch_rows=0"}, "--max_batch_rows 0: want 1 or more"},
		{[]string{"--max_response_values=0"}, "--max_response_values 0: want 1 or more"},
		{[]string{"--max_contribs_rows=0"}, "--max_contribs_rows 0: want 1 or more"},
		{[]string{"--max_batch_size=0"}, "--max_batch_size 0: want 1 or more"},
		{[]string{"--request_timeout=0"}, "--request_timeout 0s: want more than 0"},
		{[]string{"--max_inflight_body_bytes=-1"}, "--max_inflight_body_bytes -1: want 0 (no limit) or more"},
		{[]string{"--shutdown_timeout=-1s"}, "--shutdown_timeout -1s: want 0 or more"},
		{[]string{"--gc_min_heap_mib=-1"}, "--gc_min_heap_mib -1: want 0 (Go's own heap goal) to 1024"},
		{[]string{"--gc_min_heap_mib=4096"}, "--gc_min_heap_mib 4096: want 0 (Go's own heap goal) to 1024"},
		{[]string{"--log_level=loud"}, "log_level"},
		{[]string{"--model_name", "a", "extra"}, `unexpected argument "extra"`},
	} {
		if _, err := Parse(c.args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error containing %q", c.args, err, c.want)
		}
	}
}

// An InferenceService's runtime arguments are checked as the runtime would parse them, and may
// not set what the ServingRuntime sets for every model.
func TestCheckDeploymentArgs(t *testing.T) {
	for _, ok := range [][]string{
		nil,
		{"--enable_batching"},
		{"--enable_batching=false", "--max_batch_size=128", "--max_batch_delay=2ms"},
		{"--request_timeout=2m", "--log_level=debug", "--max_contribs_rows=50"},
		{"--max_batch_size", "128"},
		// These are 0 by choice: no in-flight body budget, no drain, no gathering wait, Go's own heap goal.
		{"--max_inflight_body_bytes=0", "--shutdown_timeout=0s", "--max_batch_delay=0s", "--gc_min_heap_mib=0"},
	} {
		if err := CheckDeploymentArgs(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--enable_batching=maybe"}, "want true, false or auto"},
		{[]string{"--max_batch_szie=128"}, "flag provided but not defined: -max_batch_szie"},
		{[]string{"--model_dir=/tmp"}, "--model_dir: the ServingRuntime sets it"},
		{[]string{"--http_port=9000"}, "--http_port: the ServingRuntime sets it"},
		{[]string{"--check"}, "--check: the ServingRuntime sets it"},
		{[]string{"--max_batch_rows=-5"}, "want 1 or more"},
		{[]string{"--max_response_values=0"}, "--max_response_values 0: want 1 or more"},
		{[]string{"--help"}, "not a setting"},
		{[]string{"--log_level=" + strings.Repeat("x", 300)}, "longer than 256 bytes"},
		{make([]string, 33), "33 runtime arguments: at most 32"},
		{[]string{"--enable_batching", "true"}, `runtime argument "true": not a flag`},
	} {
		if err := CheckDeploymentArgs(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: %v; want an error containing %q", c.args, err, c.want)
		}
	}
}

// runtime/README.md's flag table names every flag, and only flags the runtime has.
func TestREADMEListsEveryFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z_]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	fs := NewFlagSet(new(Values))
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("runtime/README.md's flag table lacks --%s", f.Name)
		}
		delete(documented, f.Name)
	})
	for name := range documented {
		t.Errorf("runtime/README.md's flag table has --%s, which the runtime does not", name)
	}
}
