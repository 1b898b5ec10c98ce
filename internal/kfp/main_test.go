package kfp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestRunComponent(t *testing.T) {
	var got string
	run := func(_ context.Context, e *Executor) error {
		got, _ = e.String("name", "")
		if got == "bad" {
			return errors.New("bad name")
		}
		return nil
	}
	var extra *string
	flags := func(fs *flag.FlagSet) { extra = fs.String("kubeconfig", "", "") }
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--executor-input", `{"inputs":{"parameterValues":{"name":"iris"}}}`, "--kubeconfig", "k"}, 0, ""},
		{[]string{"--executor-input", `{"inputs":{"parameterValues":{"name":"bad"}}}`}, 1, "c: bad name"},
		{[]string{"--executor-input", `{"inputs":{"unknownField":1}}`}, 1, "c: "},
		{nil, 2, "--executor-input is required"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{[]string{"--help"}, 0, "-executor-input"},
	} {
		var stderr bytes.Buffer
		if code := runComponent("c", tt.args, &stderr, flags, run); code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d with %q", tt.args, code, stderr.String(), tt.code, tt.stderr)
		}
	}
	if got != "bad" || *extra != "" {
		t.Errorf("last run saw name %q, kubeconfig %q", got, *extra)
	}
}
