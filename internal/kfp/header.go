package kfp

import (
	"sort"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
)

// descriptionIndent continues a "# Description: " header line, as KFP's compiler writes it and
// its loader reads it back (kfp.dsl.structures.ComponentSpec.from_yaml_documents).
const descriptionIndent = "#              "

// Header is the comment KFP's Python SDK writes above a compiled spec, and the only place its
// loader (kfp.components.load_component_from_file) takes a description from: line 1
// "# PIPELINE DEFINITION", line 2 "# Name: ", line 3 "# Description: " with continuation lines
// indented to match. The SDK keeps no description of an input or output when it loads a spec, so
// the description carries them as Args and Returns, the way a Python component's docstring does;
// help() and the component's description then show them to a Python user.
func Header(spec *pipelinespec.PipelineSpec) string {
	lines := strings.Split(strings.TrimSpace(spec.GetPipelineInfo().GetDescription()), "\n")
	section := func(title string, descs map[string]string) {
		if len(descs) == 0 {
			return
		}
		names := make([]string, 0, len(descs))
		for n := range descs {
			names = append(names, n)
		}
		sort.Strings(names)
		lines = append(lines, title)
		for _, n := range names {
			lines = append(lines, "    "+n+": "+strings.Join(strings.Fields(descs[n]), " "))
		}
	}
	in, out := map[string]string{}, map[string]string{}
	root := spec.GetRoot()
	for n, p := range root.GetInputDefinitions().GetParameters() {
		in[n] = orType(p.GetDescription(), p.GetParameterType().String())
	}
	for n, a := range root.GetInputDefinitions().GetArtifacts() {
		in[n] = orType(a.GetDescription(), a.GetArtifactType().GetSchemaTitle())
	}
	for n, p := range root.GetOutputDefinitions().GetParameters() {
		out[n] = orType(p.GetDescription(), p.GetParameterType().String())
	}
	for n, a := range root.GetOutputDefinitions().GetArtifacts() {
		out[n] = orType(a.GetDescription(), a.GetArtifactType().GetSchemaTitle())
	}
	section("Args:", in)
	section("Returns:", out)
	var b strings.Builder
	b.WriteString("# PIPELINE DEFINITION\n# Name: " + spec.GetPipelineInfo().GetName() + "\n")
	for i, l := range lines {
		if i == 0 {
			b.WriteString("# Description: " + l + "\n")
		} else {
			b.WriteString(descriptionIndent + l + "\n")
		}
	}
	return b.String()
}

func orType(desc, typ string) string {
	if desc != "" {
		return desc
	}
	return typ
}
