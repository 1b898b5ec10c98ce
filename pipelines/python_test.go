package pipelines

import (
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp"
)

// pythonKeywords are Python 3's keywords: a KFP input or output of one of these names cannot be
// passed or read as a keyword argument or attribute from the Python SDK (lambda was one).
var pythonKeywords = strings.Fields(`False None True and as assert async await break class continue
def del elif else except finally for from global if import in is lambda nonlocal not or pass raise
return try while with yield`)

func pythonName(n string) bool {
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		return false
	}
	for _, r := range n {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	for _, k := range pythonKeywords {
		if n == k {
			return false
		}
	}
	return true
}

// Every input and output of the package and of each component is a Python identifier that is not
// a keyword, so KFP's Python SDK can pass it as a keyword argument (task = launch(reg_lambda=1))
// and read it as task.outputs[...] or a pipeline output.
func TestNamesArePythonKeywordArguments(t *testing.T) {
	p := parseCommitted(t)
	check := func(where string, names map[string]bool) {
		for n := range names {
			if !pythonName(n) {
				t.Errorf("%s: %q is not usable as a Python keyword argument", where, n)
			}
		}
	}
	for name, c := range p.Spec.GetComponents() {
		names := map[string]bool{}
		for n := range c.GetInputDefinitions().GetParameters() {
			names[n] = true
		}
		for n := range c.GetOutputDefinitions().GetParameters() {
			names[n] = true
		}
		for n := range c.GetOutputDefinitions().GetArtifacts() {
			names[n] = true
		}
		check(name, names)
	}
	root := map[string]bool{}
	for n := range p.Spec.GetRoot().GetInputDefinitions().GetParameters() {
		root[n] = true
	}
	check("the package's parameters", root)
	for _, bad := range []string{"lambda", "class", "9a", "a-b"} {
		if pythonName(bad) {
			t.Errorf("pythonName(%q) = true", bad)
		}
	}
}

// The package's root DAG has outputs, so a pipeline that runs it as a step can pass its model,
// endpoint and accuracy on; each is the task output it names, with that output's type.
func TestPackageHasPipelineOutputs(t *testing.T) {
	p := parseCommitted(t)
	root := p.Spec.GetRoot()
	defs, outs := root.GetOutputDefinitions(), root.GetDag().GetOutputs()
	if len(Results) == 0 || len(defs.GetParameters())+len(defs.GetArtifacts()) != len(Results) {
		t.Fatalf("root outputDefinitions %v, want the %d Results", defs, len(Results))
	}
	for _, r := range Results {
		comp := p.Spec.GetComponents()["comp-"+r.Task]
		if !pythonName(r.Name) {
			t.Errorf("output %q is not a Python name", r.Name)
		}
		if want := comp.GetOutputDefinitions().GetParameters()[r.Output]; want != nil {
			sel := outs.GetParameters()[r.Name].GetValueFromParameter()
			if defs.GetParameters()[r.Name].GetParameterType() != want.GetParameterType() || sel.GetProducerSubtask() != r.Task || sel.GetOutputParameterKey() != r.Output {
				t.Errorf("output %s: %v from %v, want %s of task %s", r.Name, defs.GetParameters()[r.Name], sel, want.GetParameterType(), r.Task)
			}
			continue
		}
		want := comp.GetOutputDefinitions().GetArtifacts()[r.Output]
		sels := outs.GetArtifacts()[r.Name].GetArtifactSelectors()
		if want == nil || len(sels) != 1 || sels[0].GetProducerSubtask() != r.Task || sels[0].GetOutputArtifactKey() != r.Output ||
			defs.GetArtifacts()[r.Name].GetArtifactType().GetSchemaTitle() != want.GetArtifactType().GetSchemaTitle() {
			t.Errorf("output %s: %v from %v, want artifact %s of task %s", r.Name, defs.GetArtifacts()[r.Name], sels, r.Output, r.Task)
		}
	}
}

// KFP's Python SDK takes a loaded spec's description only from the header's "# Description: "
// line and the lines indented under it (kfp.dsl.structures.ComponentSpec.from_yaml_documents);
// the package's header carries the description and every parameter's.
func TestHeaderCarriesDescriptions(t *testing.T) {
	p := parseCommitted(t)
	header := kfp.Header(p.Spec)
	lines := strings.Split(header, "\n")
	if len(lines) < 4 || lines[0] != "# PIPELINE DEFINITION" || lines[1] != "# Name: "+Name || lines[2] != "# Description: "+Description {
		t.Fatalf("header does not open as KFP's compiler writes it:\n%s", header)
	}
	for _, prm := range Parameters {
		if !strings.Contains(header, "\n#                  "+prm.Name+": ") {
			t.Errorf("header has no Args line for %s", prm.Name)
		}
	}
}
