package localrun

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/types/known/structpb"

	claimlayout "github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/kfp"
)

// This file does locally what KFP's container driver does (backend/src/v2/driver: resolveInputs,
// resolveInputParameter, provisionOutputs): it builds a task's ExecutorInput from the pipeline
// parameters and the outputs of the tasks before it.

// RunInfo is what KFP's driver knows of the run.
type RunInfo struct {
	PipelineName string
	// RunID is the run's UUID: {{$.pipeline_job_uuid}}.
	RunID string
	// RunName is the run's resource name (the Argo workflow's): {{$.pipeline_job_resource_name}}.
	RunName string
	// DisplayName is the run's display name: {{$.pipeline_job_name}}.
	DisplayName string
	// PipelineRoot is the URI every run's artifacts go under ({{$.pipeline_root}}): KFP's is
	// minio://mlpipeline/v2/artifacts; a local run's is a file:// URI, whose path is the file.
	PipelineRoot string
	Created      time.Time
}

// RunRoot is the URI of the run under the pipeline root, as KFP's metadata client makes it
// (GenerateOutputURI(root, [pipeline, run])).
func (r RunInfo) RunRoot() string {
	return strings.TrimRight(r.PipelineRoot, "/") + "/" + r.PipelineName + "/" + r.RunID
}

// RunDir is the run's folder on local disk: <pipeline root's path>/<pipeline>/<run ID>, the names
// checked to be one path element each (under).
func (r RunInfo) RunDir() (string, error) {
	root, err := kfp.LocalPathForURI(r.PipelineRoot)
	if err != nil {
		return "", err
	}
	dir, err := under(filepath.Clean(root), r.PipelineName, r.RunID)
	if err != nil {
		return "", fmt.Errorf("pipeline %q: %w", r.PipelineName, err)
	}
	return dir, nil
}

// rootDAGExecutionID stands for the MLMD execution ID of the root DAG, which KFP gives tasks as
// {{$.pipeline_task_uuid}}; a local run has one DAG.
const rootDAGExecutionID = 1

// TaskOutputs are what a finished task published: its output parameters and artifacts (with the
// URIs and metadata its ExecutorOutput set).
type TaskOutputs struct {
	Parameters map[string]*structpb.Value
	Artifacts  map[string]*pipelinespec.ArtifactList
}

// errResolvedNull is KFP's ErrResolvedParameterNull: an optional pipeline input without a value.
var errResolvedNull = errors.New("the resolved input parameter is null")

// ResolveInputs builds a task's ExecutorInput inputs as KFP's driver does: constants (with the
// pipeline-level placeholders resolved), pipeline parameters (componentInputParameter) and upstream
// outputs (taskOutputParameter, taskOutputArtifact). Optional inputs the task leaves out stay out:
// the launcher fills the component's defaults in ({{$}} only). A STRING input given a non-string
// value gets its text form; any other type mismatch is an error.
func ResolveInputs(run RunInfo, params map[string]*structpb.Value, taskName string, task *pipelinespec.PipelineTaskSpec,
	comp *pipelinespec.ComponentSpec, done map[string]*TaskOutputs) (*pipelinespec.ExecutorInput_Inputs, error) {
	if task.GetTriggerPolicy().GetCondition() != "" {
		return nil, fmt.Errorf("task %s: triggerPolicy conditions (dsl.If) are not supported by the local runner", taskName)
	}
	if task.GetParameterIterator() != nil || task.GetArtifactIterator() != nil {
		return nil, fmt.Errorf("task %s: iterators (dsl.ParallelFor) are not supported by the local runner", taskName)
	}
	inputs := &pipelinespec.ExecutorInput_Inputs{
		ParameterValues: map[string]*structpb.Value{},
		Artifacts:       map[string]*pipelinespec.ArtifactList{},
	}
	specs := comp.GetInputDefinitions().GetParameters()
	for name, ps := range task.GetInputs().GetParameters() {
		if ps.GetParameterExpressionSelector() != "" {
			return nil, fmt.Errorf("task %s input %s: parameterExpressionSelector is not supported by the local runner", taskName, name)
		}
		v, err := resolveInputParameter(run, params, taskName, ps, done)
		if err != nil {
			if errors.Is(err, errResolvedNull) && specs[name].GetIsOptional() {
				continue // the launcher fills the default in
			}
			return nil, fmt.Errorf("task %s input %s: %w", taskName, name, err)
		}
		inputs.ParameterValues[name] = v
	}
	for name, as := range task.GetInputs().GetArtifacts() {
		switch k := as.GetKind().(type) {
		case *pipelinespec.TaskInputsSpec_InputArtifactSpec_TaskOutputArtifact:
			producer, key := k.TaskOutputArtifact.GetProducerTask(), k.TaskOutputArtifact.GetOutputArtifactKey()
			out, ok := done[producer]
			if !ok {
				return nil, fmt.Errorf("task %s input artifact %s: producer task %s has not run", taskName, name, producer)
			}
			list, ok := out.Artifacts[key]
			if !ok || len(list.GetArtifacts()) == 0 {
				return nil, fmt.Errorf("task %s input artifact %s: task %s has no output artifact %q", taskName, name, producer, key)
			}
			for _, a := range list.GetArtifacts() {
				if err := checkInputArtifactURI(run, a.GetUri()); err != nil {
					return nil, fmt.Errorf("task %s input artifact %s (from %s.%s): %w", taskName, name, producer, key, err)
				}
			}
			inputs.Artifacts[name] = list
		default:
			return nil, fmt.Errorf("task %s input artifact %s: %T inputs are not supported by the local runner (pipeline-level input artifacts, importers)", taskName, name, k)
		}
	}
	if err := checkParameterTypes(taskName, specs, inputs.ParameterValues); err != nil {
		return nil, err
	}
	return inputs, nil
}

func resolveInputParameter(run RunInfo, params map[string]*structpb.Value, taskName string,
	ps *pipelinespec.TaskInputsSpec_InputParameterSpec, done map[string]*TaskOutputs) (*structpb.Value, error) {
	switch k := ps.GetKind().(type) {
	case *pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter:
		v, ok := params[k.ComponentInputParameter]
		if !ok {
			return nil, fmt.Errorf("the pipeline has no input parameter %s", k.ComponentInputParameter)
		}
		if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull {
			return nil, fmt.Errorf("%w: %s", errResolvedNull, k.ComponentInputParameter)
		}
		return v, nil
	case *pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter:
		producer, key := k.TaskOutputParameter.GetProducerTask(), k.TaskOutputParameter.GetOutputParameterKey()
		out, ok := done[producer]
		if !ok {
			return nil, fmt.Errorf("producer task %s has not run", producer)
		}
		v, ok := out.Parameters[key]
		if !ok {
			return nil, fmt.Errorf("task %s has no output parameter %q", producer, key)
		}
		return v, nil
	case *pipelinespec.TaskInputsSpec_InputParameterSpec_RuntimeValue:
		c := k.RuntimeValue.GetConstant()
		if c == nil {
			return nil, fmt.Errorf("runtimeValue without a constant")
		}
		return resolveConstant(run, taskName, c), nil
	default:
		return nil, fmt.Errorf("input parameters of kind %T are not supported by the local runner", k)
	}
}

// resolveConstant replaces a pipeline-level placeholder that is the whole constant, as KFP's driver
// does (resolveInputParameter: a switch on the whole string, so "x-{{$.pipeline_job_uuid}}" stays
// as written). {{$.pipeline_root}} is resolved as kfp.local resolves it; KFP's driver leaves it.
func resolveConstant(run RunInfo, taskName string, c *structpb.Value) *structpb.Value {
	s, ok := c.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return c
	}
	switch s.StringValue {
	case "{{$.pipeline_job_name}}":
		return structpb.NewStringValue(run.DisplayName)
	case "{{$.pipeline_job_resource_name}}":
		return structpb.NewStringValue(run.RunName)
	case "{{$.pipeline_job_uuid}}":
		return structpb.NewStringValue(run.RunID)
	case "{{$.pipeline_task_name}}":
		return structpb.NewStringValue(taskName)
	case "{{$.pipeline_task_uuid}}":
		return structpb.NewStringValue(fmt.Sprint(rootDAGExecutionID))
	case "{{$.pipeline_job_create_time_utc}}", "{{$.pipeline_job_schedule_time_utc}}":
		return structpb.NewStringValue(run.Created.UTC().Format(time.RFC3339))
	case "{{$.pipeline_root}}":
		return structpb.NewStringValue(run.PipelineRoot)
	}
	return c
}

// checkParameterTypes is the driver's type validation and conversion
// (handleParamTypeValidationAndConversion).
func checkParameterTypes(taskName string, specs map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec, values map[string]*structpb.Value) error {
	for name, spec := range specs {
		v, ok := values[name]
		if !ok {
			if !spec.GetIsOptional() && spec.GetDefaultValue() == nil {
				return fmt.Errorf("task %s: neither value nor default value provided for non-optional parameter %q", taskName, name)
			}
			continue
		}
		t := spec.GetParameterType()
		mismatch := func(actual string) error {
			return fmt.Errorf("task %s: input parameter %q type mismatch: expect %s, got %s", taskName, name, t, actual)
		}
		if t == pipelinespec.ParameterType_STRING {
			if _, isString := v.GetKind().(*structpb.Value_StringValue); !isString {
				text, err := valueText(v)
				if err != nil {
					return fmt.Errorf("task %s: converting input parameter %q to string: %w", taskName, name, err)
				}
				values[name] = structpb.NewStringValue(text)
			}
			continue
		}
		switch v.GetKind().(type) {
		case *structpb.Value_NullValue:
			return fmt.Errorf("task %s: got null for input parameter %q", taskName, name)
		case *structpb.Value_StringValue:
			return mismatch("string")
		case *structpb.Value_NumberValue:
			if t != pipelinespec.ParameterType_NUMBER_DOUBLE && t != pipelinespec.ParameterType_NUMBER_INTEGER {
				return mismatch("number")
			}
		case *structpb.Value_BoolValue:
			if t != pipelinespec.ParameterType_BOOLEAN {
				return mismatch("bool")
			}
		case *structpb.Value_ListValue:
			if t != pipelinespec.ParameterType_LIST {
				return mismatch("list")
			}
		case *structpb.Value_StructValue:
			if t != pipelinespec.ParameterType_STRUCT && t != pipelinespec.ParameterType_TASK_FINAL_STATUS {
				return mismatch("struct")
			}
		}
	}
	return nil
}

// checkInputArtifactURI fails as KFP's launcher fails on an input artifact it cannot download
// (objectstore.ParseBucketConfigForArtifactURI): only the run's own pipeline root is readable
// locally, and a pvc:// URI fails in a cluster too ("unsupported Cloud bucket").
func checkInputArtifactURI(run RunInfo, uri string) error {
	if strings.HasPrefix(uri, strings.TrimRight(run.PipelineRoot, "/")+"/") {
		// A step sets its outputs' URIs (ExecutorOutput): "<root>/../../x" starts with the root
		// but is not in it.
		root, rerr := kfp.LocalPathForURI(run.PipelineRoot)
		path, perr := kfp.LocalPathForURI(uri)
		if rerr == nil && perr == nil {
			if err := inside(filepath.Clean(root), filepath.Clean(path)); err != nil {
				return fmt.Errorf("input artifact %q: %w", uri, err)
			}
		}
		return nil
	}
	if strings.HasPrefix(uri, claimlayout.Scheme) || !strings.Contains(uri, "://") || strings.HasPrefix(uri, "file://") {
		return fmt.Errorf("parse bucket config failed: unsupported Cloud bucket: %q (KFP's launcher downloads input artifacts from gs, s3, minio or mem only: pass a location on a claim as a string parameter)", uri)
	}
	return fmt.Errorf("input artifact %q is in remote storage, which the local runner does not download", uri)
}

// ProvisionOutputs is KFP's provisionOutputs with the pipeline root on local disk: the task root is
// <run root>/<task>/<uuid>, each output artifact's URI is <task root>/<name>, the ExecutorOutput
// goes to <task root's path>/output_metadata.json (as in KFP 2.15+), and each output parameter's
// file is under the task root's path (KFP: /tmp/kfp/outputs/<name>). It returns the task root's
// path. Every name becomes a path through under: a task or output name that is not one path
// element is an error.
func ProvisionOutputs(run RunInfo, taskName string, outputs *pipelinespec.ComponentOutputsSpec) (*pipelinespec.ExecutorInput_Outputs, string, error) {
	runDir, err := run.RunDir()
	if err != nil {
		return nil, "", err
	}
	id := newUUID()
	taskDir, err := under(runDir, taskName, id)
	if err != nil {
		return nil, "", fmt.Errorf("task name: %w", err)
	}
	taskRoot := run.RunRoot() + "/" + taskName + "/" + id
	out := &pipelinespec.ExecutorInput_Outputs{
		Artifacts:  map[string]*pipelinespec.ArtifactList{},
		Parameters: map[string]*pipelinespec.ExecutorInput_OutputParameter{},
		OutputFile: filepath.Join(taskDir, "output_metadata.json"),
	}
	for name, a := range outputs.GetArtifacts() {
		if _, err := under(taskDir, name); err != nil {
			return nil, "", fmt.Errorf("task %s output artifact name: %w", taskName, err)
		}
		out.Artifacts[name] = &pipelinespec.ArtifactList{Artifacts: []*pipelinespec.RuntimeArtifact{{
			Name: name, Uri: taskRoot + "/" + name, Type: a.GetArtifactType(), Metadata: a.GetMetadata(),
		}}}
	}
	for name := range outputs.GetParameters() {
		file, err := under(taskDir, "output-parameters", name)
		if err != nil {
			return nil, "", fmt.Errorf("task %s output parameter name: %w", taskName, err)
		}
		out.Parameters[name] = &pipelinespec.ExecutorInput_OutputParameter{OutputFile: file}
	}
	return out, taskDir, nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
