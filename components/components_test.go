package components

import (
	"strings"
	"testing"
)

// TestEmbedded: every component the pipeline composes is embedded and parses strictly, with one
// component and its executor.
func TestEmbedded(t *testing.T) {
	names := Names()
	for _, want := range []string{"deploy-inferenceservice", "evaluate", "launch-xgboostjob", "prepare-data", "promote-model"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("Names() = %v, missing %s", names, want)
		}
	}
	for _, name := range names {
		spec, err := Spec(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		c := spec.GetComponents()["comp-"+name]
		if c == nil || spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()[c.GetExecutorLabel()] == nil {
			t.Errorf("%s: no comp-%s with its executor", name, name)
		}
	}
	if _, err := Spec("nope"); err == nil || !strings.Contains(err.Error(), "components/nope/component.yaml") {
		t.Errorf("Spec(nope) = %v", err)
	}
}

// TestParseSpecStrict: an unknown field is an error, as in KFP's API server.
func TestParseSpecStrict(t *testing.T) {
	if _, err := ParseSpec([]byte("pipelineInfo:\n  name: x\n  nope: 1\n")); err == nil {
		t.Error("unknown field parsed")
	}
}
