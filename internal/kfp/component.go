package kfp

import (
	"fmt"
	"sort"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"
)

// ParameterType is a component parameter's KFP type.
type ParameterType string

// The parameter types components use.
const (
	String  ParameterType = "STRING"
	Integer ParameterType = "NUMBER_INTEGER"
	Double  ParameterType = "NUMBER_DOUBLE"
	Boolean ParameterType = "BOOLEAN"
	Struct  ParameterType = "STRUCT"
	List    ParameterType = "LIST"
)

// Input is one input of a component: a parameter (Type set) or an optional input artifact
// (Artifact set to a schema title such as "system.Dataset").
type Input struct {
	Name     string
	Type     ParameterType
	Artifact string
	// Default is nil for a required input.
	Default     any
	Description string
}

// Output is one output of a component: a parameter (Type set) or an artifact (Artifact set to a
// schema title such as "system.Model").
type Output struct {
	Name        string
	Type        ParameterType
	Artifact    string
	Description string
}

// Component is a KFP v2 component as the gangboost image runs it: the command is
// `<Name> --executor-input {{$}}` (only {{$}} is replaced inside a command), and everything the
// step needs travels in the ExecutorInput. Its component.yaml is generated from this value.
type Component struct {
	Name        string
	Description string
	Image       string
	Inputs      []Input
	Outputs     []Output
}

// ComponentName and ExecutorLabel are the names a component's spec and executor have in a
// PipelineSpec (comp-x, exec-x, as KFP's SDK names them).
func (c *Component) ComponentName() string { return "comp-" + c.Name }
func (c *Component) ExecutorLabel() string { return "exec-" + c.Name }

// Command is the container command of the component's executor.
func (c *Component) Command() []string { return []string{c.Name, "--executor-input", "{{$}}"} }

// InputSpec is the component's inputDefinitions.
func (c *Component) InputSpec() (*pipelinespec.ComponentInputsSpec, error) {
	inputs := &pipelinespec.ComponentInputsSpec{Parameters: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{}}
	for _, in := range c.Inputs {
		if in.Artifact != "" {
			if inputs.Artifacts == nil {
				inputs.Artifacts = map[string]*pipelinespec.ComponentInputsSpec_ArtifactSpec{}
			}
			inputs.Artifacts[in.Name] = &pipelinespec.ComponentInputsSpec_ArtifactSpec{
				ArtifactType: &pipelinespec.ArtifactTypeSchema{
					Kind: &pipelinespec.ArtifactTypeSchema_SchemaTitle{SchemaTitle: in.Artifact}, SchemaVersion: "0.0.1"},
				Description: in.Description, IsOptional: true,
			}
			continue
		}
		t, ok := pipelinespec.ParameterType_ParameterTypeEnum_value[string(in.Type)]
		if !ok {
			return nil, fmt.Errorf("component %s: input %s: unknown parameter type %q", c.Name, in.Name, in.Type)
		}
		ps := &pipelinespec.ComponentInputsSpec_ParameterSpec{
			ParameterType: pipelinespec.ParameterType_ParameterTypeEnum(t),
			Description:   in.Description,
		}
		if in.Default != nil {
			v, err := structpb.NewValue(in.Default)
			if err != nil {
				return nil, fmt.Errorf("component %s: input %s default: %w", c.Name, in.Name, err)
			}
			ps.DefaultValue, ps.IsOptional = v, true
		}
		inputs.Parameters[in.Name] = ps
	}
	return inputs, nil
}

// OutputSpec is the component's outputDefinitions.
func (c *Component) OutputSpec() (*pipelinespec.ComponentOutputsSpec, error) {
	outputs := &pipelinespec.ComponentOutputsSpec{}
	for _, out := range c.Outputs {
		if out.Artifact != "" {
			if outputs.Artifacts == nil {
				outputs.Artifacts = map[string]*pipelinespec.ComponentOutputsSpec_ArtifactSpec{}
			}
			outputs.Artifacts[out.Name] = &pipelinespec.ComponentOutputsSpec_ArtifactSpec{
				ArtifactType: &pipelinespec.ArtifactTypeSchema{
					Kind: &pipelinespec.ArtifactTypeSchema_SchemaTitle{SchemaTitle: out.Artifact}, SchemaVersion: "0.0.1"},
				Description: out.Description,
			}
			continue
		}
		t, ok := pipelinespec.ParameterType_ParameterTypeEnum_value[string(out.Type)]
		if !ok {
			return nil, fmt.Errorf("component %s: output %s: unknown parameter type %q", c.Name, out.Name, out.Type)
		}
		if outputs.Parameters == nil {
			outputs.Parameters = map[string]*pipelinespec.ComponentOutputsSpec_ParameterSpec{}
		}
		outputs.Parameters[out.Name] = &pipelinespec.ComponentOutputsSpec_ParameterSpec{
			ParameterType: pipelinespec.ParameterType_ParameterTypeEnum(t), Description: out.Description}
	}
	return outputs, nil
}

// ExecutorSpec is the component's entry under deploymentSpec.executors.
func (c *Component) ExecutorSpec() map[string]any {
	cmd := make([]any, 0, 3)
	for _, s := range c.Command() {
		cmd = append(cmd, s)
	}
	return map[string]any{"container": map[string]any{"image": c.Image, "command": cmd}}
}

// Spec is the component as KFP's SDK compiles a single component: PipelineSpec IR whose root DAG
// has one task that passes every input through and exposes every output.
func (c *Component) Spec() (*pipelinespec.PipelineSpec, error) {
	inputs, err := c.InputSpec()
	if err != nil {
		return nil, err
	}
	outputs, err := c.OutputSpec()
	if err != nil {
		return nil, err
	}
	taskInputs := &pipelinespec.TaskInputsSpec{Parameters: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{}}
	for _, in := range c.Inputs {
		if in.Artifact != "" {
			if taskInputs.Artifacts == nil {
				taskInputs.Artifacts = map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec{}
			}
			taskInputs.Artifacts[in.Name] = &pipelinespec.TaskInputsSpec_InputArtifactSpec{
				Kind: &pipelinespec.TaskInputsSpec_InputArtifactSpec_ComponentInputArtifact{ComponentInputArtifact: in.Name}}
			continue
		}
		taskInputs.Parameters[in.Name] = &pipelinespec.TaskInputsSpec_InputParameterSpec{
			Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter{ComponentInputParameter: in.Name},
		}
	}
	deployment, err := structpb.NewStruct(map[string]any{"executors": map[string]any{c.ExecutorLabel(): c.ExecutorSpec()}})
	if err != nil {
		return nil, err
	}
	dagOut := &pipelinespec.DagOutputsSpec{}
	for name := range outputs.Artifacts {
		if dagOut.Artifacts == nil {
			dagOut.Artifacts = map[string]*pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{}
		}
		dagOut.Artifacts[name] = &pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{ArtifactSelectors: []*pipelinespec.DagOutputsSpec_ArtifactSelectorSpec{
			{ProducerSubtask: c.Name, OutputArtifactKey: name}}}
	}
	for name := range outputs.Parameters {
		if dagOut.Parameters == nil {
			dagOut.Parameters = map[string]*pipelinespec.DagOutputsSpec_DagOutputParameterSpec{}
		}
		dagOut.Parameters[name] = &pipelinespec.DagOutputsSpec_DagOutputParameterSpec{Kind: &pipelinespec.DagOutputsSpec_DagOutputParameterSpec_ValueFromParameter{
			ValueFromParameter: &pipelinespec.DagOutputsSpec_ParameterSelectorSpec{ProducerSubtask: c.Name, OutputParameterKey: name}}}
	}
	return &pipelinespec.PipelineSpec{
		PipelineInfo:  &pipelinespec.PipelineInfo{Name: c.Name, Description: c.Description},
		SchemaVersion: "2.1.0",
		SdkVersion:    "kfp-2.14.3",
		Components: map[string]*pipelinespec.ComponentSpec{c.ComponentName(): {
			InputDefinitions: inputs, OutputDefinitions: outputs,
			Implementation: &pipelinespec.ComponentSpec_ExecutorLabel{ExecutorLabel: c.ExecutorLabel()},
		}},
		DeploymentSpec: deployment,
		Root: &pipelinespec.ComponentSpec{
			InputDefinitions: inputs, OutputDefinitions: outputs,
			Implementation: &pipelinespec.ComponentSpec_Dag{Dag: &pipelinespec.DagSpec{
				Outputs: dagOut,
				Tasks: map[string]*pipelinespec.PipelineTaskSpec{c.Name: {
					TaskInfo:       &pipelinespec.PipelineTaskInfo{Name: c.Name},
					ComponentRef:   &pipelinespec.ComponentRef{Name: c.ComponentName()},
					Inputs:         taskInputs,
					CachingOptions: &pipelinespec.PipelineTaskSpec_CachingOptions{EnableCache: false},
				}},
			}},
		},
	}, nil
}

// YAML is the component.yaml file: KFP's header (name, description) and a line naming the
// generator, then the Spec as YAML.
func (c *Component) YAML(generator string) ([]byte, error) {
	spec, err := c.Spec()
	if err != nil {
		return nil, err
	}
	js, err := protojson.Marshal(spec)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	header := Header(spec) + "# Generated from " + generator + "\n"
	return append([]byte(header), y...), nil
}

// InputNames are the names of the component's inputs, sorted.
func (c *Component) InputNames() []string {
	names := make([]string, 0, len(c.Inputs))
	for _, in := range c.Inputs {
		names = append(names, in.Name)
	}
	sort.Strings(names)
	return names
}

// DefaultParameters are the inputs that have defaults, with them: what KFP puts in an
// ExecutorInput for inputs a task leaves out.
func (c *Component) DefaultParameters() map[string]any {
	params := map[string]any{}
	for _, in := range c.Inputs {
		if in.Default != nil && in.Artifact == "" {
			params[in.Name] = in.Default
		}
	}
	return params
}
