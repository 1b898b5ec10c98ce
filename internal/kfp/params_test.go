package kfp

import (
	"strings"
	"testing"
)

// TestParams: inputs the ExecutorInput carries but the component does not declare, reads of
// undeclared inputs and badly typed values are all reported at once.
func TestParams(t *testing.T) {
	e, err := ParseExecutorInput([]byte(`{"inputs": {"parameterValues": {"name": "iris", "rounds": 7, "extra": "x", "eta": "fast"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := e.Params([]Input{{Name: "name", Type: String}, {Name: "rounds", Type: Integer}, {Name: "eta", Type: Double}, {Name: "empty", Type: String}})
	if got := in.String("name", ""); got != "iris" {
		t.Errorf("name = %q", got)
	}
	if got := in.Int("rounds", 0); got != 7 {
		t.Errorf("rounds = %d", got)
	}
	if got := in.NonEmpty("empty", "default"); got != "default" {
		t.Errorf("absent input = %q, want its default", got)
	}
	in.Float("eta", 0.3)
	in.String("undeclared", "")
	err = in.Err()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown input parameter "extra"`, `reads input "undeclared"`, "eta"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
