package pipelines

import (
	"fmt"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/types/known/structpb"
)

// RunValues are what KFP's driver resolves a root-DAG task's inputs from.
type RunValues struct {
	// Parameters are the run's parameter values; a parameter left out takes its default.
	Parameters map[string]*structpb.Value
	// Outputs are the output parameters of the tasks that have finished, by task.
	Outputs map[string]map[string]*structpb.Value
	// Placeholders are the values of the pipeline placeholders a constant may be, such as
	// "{{$.pipeline_job_uuid}}".
	Placeholders map[string]string
}

// TaskInputs are the parameter values a task's executor gets, as KFP's driver resolves them: a
// pipeline parameter (the run's value, else its default), another task's output, or a constant
// (a whole pipeline placeholder replaced); then the component's defaults for inputs left unset.
func TaskInputs(spec *pipelinespec.PipelineSpec, task string, rv RunValues) (map[string]*structpb.Value, error) {
	t := spec.GetRoot().GetDag().GetTasks()[task]
	if t == nil {
		return nil, fmt.Errorf("the pipeline has no task %q", task)
	}
	comp := spec.GetComponents()[t.GetComponentRef().GetName()]
	if comp == nil {
		return nil, fmt.Errorf("task %s: no component %q", task, t.GetComponentRef().GetName())
	}
	root := spec.GetRoot().GetInputDefinitions().GetParameters()
	values := map[string]*structpb.Value{}
	for name, in := range t.GetInputs().GetParameters() {
		switch kind := in.GetKind().(type) {
		case *pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter:
			p := kind.ComponentInputParameter
			v := rv.Parameters[p]
			if v == nil {
				v = root[p].GetDefaultValue()
			}
			if v == nil {
				return nil, fmt.Errorf("task %s input %s: pipeline parameter %s has no value and no default", task, name, p)
			}
			values[name] = v
		case *pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter:
			from := kind.TaskOutputParameter
			v := rv.Outputs[from.GetProducerTask()][from.GetOutputParameterKey()]
			if v == nil {
				return nil, fmt.Errorf("task %s input %s: task %s has no output %s", task, name, from.GetProducerTask(), from.GetOutputParameterKey())
			}
			values[name] = v
		case *pipelinespec.TaskInputsSpec_InputParameterSpec_RuntimeValue:
			v := kind.RuntimeValue.GetConstant()
			if s, ok := rv.Placeholders[v.GetStringValue()]; ok && pipelinePlaceholders[v.GetStringValue()] {
				v = structpb.NewStringValue(s)
			}
			values[name] = v
		default:
			return nil, fmt.Errorf("task %s input %s: %T is not supported", task, name, kind)
		}
	}
	for name, def := range comp.GetInputDefinitions().GetParameters() {
		if values[name] != nil {
			continue
		}
		if def.GetDefaultValue() == nil {
			if def.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("task %s: required input %s has no value", task, name)
		}
		values[name] = def.GetDefaultValue()
	}
	return values, nil
}
