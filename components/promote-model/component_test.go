package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/promote"
)

var update = flag.Bool("update", false, "rewrite component.yaml from promote.Component")

const generator = "internal/steps/promote.Component: go test ./components/promote-model -update"

// TestComponentYAML: component.yaml is the IR generated from promote.Component (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	kfptest.CheckComponentYAML(t, promote.Component(image), "component.yaml", generator, *update)
}

// TestREADME: the README documents every input and output of the component.
func TestREADME(t *testing.T) {
	kfptest.CheckREADME(t, promote.Component(image), "README.md")
}

// TestInputsAreChecked: a verdict that is not true or false, a missing name, a model_uri off the
// claim: refused before the service is touched, each naming the input.
func TestInputsAreChecked(t *testing.T) {
	base := map[string]any{"name": "iris", "model_uri": "pvc://gangboost-models/models/iris/run-2", "promote": "true", "namespace": "ml"}
	cases := []struct {
		change map[string]any
		want   string
	}{
		{map[string]any{"promote": "yes"}, `promote "yes": want true or false`},
		{map[string]any{"name": ""}, "name is empty"},
		{map[string]any{"model_uri": "pvc://other/models/iris/run-2"}, `is on claim "other" but pvc_name is "gangboost-models"`},
		{map[string]any{"champion_model_uri": "gs://bucket/iris"}, "champion_model_uri"},
	}
	for _, c := range cases {
		p := map[string]any{}
		for k, v := range base {
			p[k] = v
		}
		for k, v := range c.change {
			p[k] = v
		}
		e, err := kfp.ParseExecutorInput(kfptest.ExecutorInput(t, promote.Component(image), p, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := promote.RequestFromExecutor(e, "ml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.change, err, c.want)
		}
	}
	e, err := kfp.ParseExecutorInput(kfptest.ExecutorInput(t, promote.Component(image), base, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := promote.RequestFromExecutor(e, "ml")
	if err != nil || !r.Promote || r.Service.ModelPath != "models/iris/run-2" || r.Service.MountPath != "/mnt/pvc" {
		t.Errorf("request = %+v, %v", r, err)
	}
}
