package pipelines

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
)

var markdownEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// ParametersTable is the README's table of the pipeline's parameters, in Parameters' order,
// from the built spec.
func ParametersTable(spec *pipelinespec.PipelineSpec) string {
	var b strings.Builder
	b.WriteString("| parameter | type | default | goes to | description |\n| --- | --- | --- | --- | --- |\n")
	defs := spec.GetRoot().GetInputDefinitions().GetParameters()
	for _, p := range Parameters {
		d := defs[p.Name]
		def, _ := json.Marshal(d.GetDefaultValue().AsInterface())
		var to []string
		for _, t := range p.Feeds {
			to = append(to, t.Task+"."+t.Input)
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", p.Name, d.GetParameterType(), def,
			strings.Join(to, ", "), markdownEscaper.Replace(d.GetDescription()))
	}
	return b.String()
}
