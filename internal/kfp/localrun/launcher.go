package localrun

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
)

// This file does locally what KFP's v2 launcher does (backend/src/v2/component/launcher_v2.go):
// fill the component's defaults into the ExecutorInput, replace the placeholders in the command
// line, and after the step read its ExecutorOutput and output parameter files back.

// WithDefaults is the ExecutorInput with the component's default parameter values filled in where
// the task gave none (the launcher's addDefaultParams): what {{$}} and the placeholders see.
func WithDefaults(in *pipelinespec.ExecutorInput, comp *pipelinespec.ComponentSpec) *pipelinespec.ExecutorInput {
	out := proto.Clone(in).(*pipelinespec.ExecutorInput)
	if out.Inputs == nil {
		out.Inputs = &pipelinespec.ExecutorInput_Inputs{}
	}
	if out.Inputs.ParameterValues == nil {
		out.Inputs.ParameterValues = map[string]*structpb.Value{}
	}
	for name, spec := range comp.GetInputDefinitions().GetParameters() {
		if _, ok := out.Inputs.ParameterValues[name]; !ok && spec.GetDefaultValue() != nil {
			out.Inputs.ParameterValues[name] = spec.GetDefaultValue()
		}
	}
	return out
}

// CompileCommand resolves a container's command and args as KFP resolves them: the driver turns
// IfPresent clauses into their Then or Else (KFP 2.17+; presence is judged before defaults, and a
// null counts as absent), then the launcher replaces {{$}} everywhere and, in every element but the
// first (the launcher runs command[0] with the rest as its arguments), the input and output
// placeholders (compileCmdAndArgs, getPlaceholders).
//
// Each element is resolved in one pass: what a placeholder is replaced by is data, never read
// again for placeholders. KFP's launcher replaces one placeholder after another over the whole
// string, in map order, so a parameter value that spells a placeholder, or the {{$}} JSON holding
// one, may be expanded again, unescaped: a value "{{$.inputs.parameters['pvc_mount_path']}}" would
// become the mount path, and inside {{$}} a value with a quote would break the JSON.
//
// Two placeholders KFP's launcher leaves verbatim are resolved as kfp.local resolves them, each
// with a note: {{$.outputs.output_file}} and an artifact's .metadata. Concat is never resolved
// (KFP's backend does not either); any placeholder left is reported in the notes.
func CompileCommand(in, withDefaults *pipelinespec.ExecutorInput, command, args []string) (argv []string, notes []string, err error) {
	js, err := protojson.Marshal(withDefaults)
	if err != nil {
		return nil, nil, fmt.Errorf("encode executor input: %w", err)
	}
	return compileCommand(in, withDefaults, js, command, args)
}

// compileCommand is CompileCommand with {{$}} given: the bytes the runner also records as the
// step's executor_input.json.
func compileCommand(in, withDefaults *pipelinespec.ExecutorInput, executorInput []byte, command, args []string) (argv []string, notes []string, err error) {
	var all []string
	for _, part := range [][]string{command, args} {
		for _, a := range part {
			if strings.HasPrefix(strings.TrimSpace(a), `{"IfPresent":`) {
				resolved, err := resolveIfPresent(a, in)
				if err != nil {
					return nil, nil, err
				}
				all = append(all, resolved...)
				continue
			}
			all = append(all, a)
		}
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("command and arguments are empty")
	}
	placeholders, err := Placeholders(withDefaults)
	if err != nil {
		return nil, nil, err
	}
	extras, err := localPlaceholders(withDefaults)
	if err != nil {
		return nil, nil, err
	}
	program := strings.NewReplacer("{{$}}", string(executorInput))
	arguments := onePass(map[string]string{"{{$}}": string(executorInput)}, placeholders, extras)
	argv = make([]string, 0, len(all))
	noted := map[string]bool{}
	for i, a := range all {
		for _, m := range leftover.FindAllString(a, -1) {
			_, known := placeholders[m]
			_, local := extras[m]
			if (i == 0 || !known && !local) && !noted[m] {
				noted[m] = true
				notes = append(notes, fmt.Sprintf("%s is not resolved (KFP's launcher leaves it as written too)", m))
			}
		}
		if i == 0 {
			argv = append(argv, program.Replace(a))
			continue
		}
		for _, k := range sortedKeys(extras) {
			if strings.Contains(a, k) && !noted[k] {
				noted[k] = true
				notes = append(notes, fmt.Sprintf("%s resolved as kfp.local does; KFP's launcher leaves it as written", k))
			}
		}
		argv = append(argv, arguments.Replace(a))
	}
	return argv, notes, nil
}

// onePass is a one-pass replacer of every placeholder in the maps: at each position the longest
// placeholder that matches is replaced, and the text put in is not scanned again.
func onePass(maps ...map[string]string) *strings.Replacer {
	all := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			all[k] = v
		}
	}
	keys := sortedKeys(all)
	// strings.Replacer tries the pairs in order at each position: longest first, so
	// "...metadata['rows']}}" wins over a shorter key it starts with.
	sort.SliceStable(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, all[k])
	}
	return strings.NewReplacer(pairs...)
}

var leftover = regexp.MustCompile(`\{\{\$\.[^}]*\}\}`)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Placeholders are the launcher's placeholders and their values (getPlaceholders): input
// parameters (numbers formatted without exponent, lists and structs as JSON), input and output
// artifacts' uri and path, output parameters' output_file.
func Placeholders(in *pipelinespec.ExecutorInput) (map[string]string, error) {
	p := map[string]string{}
	for name, list := range in.GetInputs().GetArtifacts() {
		if len(list.GetArtifacts()) == 0 {
			continue
		}
		a := list.GetArtifacts()[0]
		p[fmt.Sprintf(`{{$.inputs.artifacts['%s'].uri}}`, name)] = a.GetUri()
		if path, err := kfp.LocalPathForURI(a.GetUri()); err == nil {
			p[fmt.Sprintf(`{{$.inputs.artifacts['%s'].path}}`, name)] = path
		}
	}
	for name, list := range in.GetOutputs().GetArtifacts() {
		if len(list.GetArtifacts()) == 0 {
			continue
		}
		a := list.GetArtifacts()[0]
		p[fmt.Sprintf(`{{$.outputs.artifacts['%s'].uri}}`, name)] = a.GetUri()
		path, err := kfp.LocalPathForURI(a.GetUri())
		if err != nil {
			return nil, fmt.Errorf("failed to get placeholders: resolve output artifact %q's local path: %w", name, err)
		}
		p[fmt.Sprintf(`{{$.outputs.artifacts['%s'].path}}`, name)] = path
	}
	for name, v := range in.GetInputs().GetParameterValues() {
		text, err := valueText(v)
		if err != nil {
			return nil, fmt.Errorf("failed to get placeholders: input parameter %q: %w", name, err)
		}
		p[fmt.Sprintf(`{{$.inputs.parameters['%s']}}`, name)] = text
	}
	for name, op := range in.GetOutputs().GetParameters() {
		p[fmt.Sprintf(`{{$.outputs.parameters['%s'].output_file}}`, name)] = op.GetOutputFile()
	}
	return p, nil
}

// localPlaceholders are the ones kfp.local resolves (placeholder_utils.py) and KFP's launcher does
// not: the ExecutorOutput's file and artifacts' metadata as JSON.
func localPlaceholders(in *pipelinespec.ExecutorInput) (map[string]string, error) {
	p := map[string]string{"{{$.outputs.output_file}}": in.GetOutputs().GetOutputFile()}
	add := func(side string, artifacts map[string]*pipelinespec.ArtifactList) error {
		for name, list := range artifacts {
			if len(list.GetArtifacts()) == 0 {
				continue
			}
			md := list.GetArtifacts()[0].GetMetadata()
			b := []byte("{}")
			if md != nil {
				var err error
				if b, err = protojson.Marshal(md); err != nil {
					return err
				}
			}
			p[fmt.Sprintf(`{{$.%s.artifacts['%s'].metadata}}`, side, name)] = string(b)
			for key, v := range md.GetFields() {
				text, err := valueText(v)
				if err != nil {
					return err
				}
				p[fmt.Sprintf(`{{$.%s.artifacts['%s'].metadata['%s']}}`, side, name, key)] = text
			}
		}
		return nil
	}
	if err := add("inputs", in.GetInputs().GetArtifacts()); err != nil {
		return nil, err
	}
	if err := add("outputs", in.GetOutputs().GetArtifacts()); err != nil {
		return nil, err
	}
	return p, nil
}

// valueText is KFP's PbValueToText: strings as they are, numbers without exponent, lists and
// structs as JSON, null as "".
func valueText(v *structpb.Value) (string, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return "", nil
	case *structpb.Value_StringValue:
		return k.StringValue, nil
	case *structpb.Value_NumberValue:
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64), nil
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue), nil
	case *structpb.Value_ListValue:
		b, err := json.Marshal(k.ListValue)
		return string(b), err
	case *structpb.Value_StructValue:
		b, err := json.Marshal(k.StructValue)
		return string(b), err
	default:
		return "", fmt.Errorf("unknown value type %T", k)
	}
}

// resolveIfPresent is the driver's resolveCondition.
func resolveIfPresent(arg string, in *pipelinespec.ExecutorInput) ([]string, error) {
	var c struct {
		IfPresent struct {
			InputName string `json:"InputName"`
			Then      any    `json:"Then"`
			Else      any    `json:"Else"`
		} `json:"IfPresent"`
	}
	if err := json.Unmarshal([]byte(arg), &c); err != nil {
		return nil, fmt.Errorf("failed to parse IfPresent JSON: %w", err)
	}
	v, present := in.GetInputs().GetParameterValues()[c.IfPresent.InputName]
	if present {
		if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull {
			present = false
		}
	}
	chosen := c.IfPresent.Else
	if present {
		chosen = c.IfPresent.Then
	}
	switch x := chosen.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, item := range x {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("non-string item in IfPresent Then/Else array: %T", item)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unexpected type in IfPresent Then/Else: %T", x)
	}
}

// ReadExecutorOutput reads the ExecutorOutput a step wrote, as the launcher does
// (getExecutorOutputFile): no file is an empty output; the file is parsed with strict protojson, so
// an unknown field fails the task.
func ReadExecutorOutput(path string) (*pipelinespec.ExecutorOutput, error) {
	out := &pipelinespec.ExecutorOutput{
		ParameterValues: map[string]*structpb.Value{},
		Artifacts:       map[string]*pipelinespec.ArtifactList{},
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read output metadata file %q: %w", path, err)
	}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("failed to unmarshall ExecutorOutput in file %q: %w", path, err)
	}
	return out, nil
}

// CollectOutputs merges a finished step's outputs as the launcher does: each output parameter from
// the ExecutorOutput, else from its output_file parsed as its type (collectOutputParameters; a
// missing file fails the task); each output artifact with the ExecutorOutput's URI (when set) and
// metadata keys laid over the provisioned ones (mergeRuntimeArtifacts).
func CollectOutputs(in *pipelinespec.ExecutorInput, out *pipelinespec.ExecutorOutput, comp *pipelinespec.ComponentSpec) (*TaskOutputs, error) {
	res := &TaskOutputs{Parameters: map[string]*structpb.Value{}, Artifacts: map[string]*pipelinespec.ArtifactList{}}
	for name, v := range out.GetParameterValues() {
		res.Parameters[name] = v
	}
	for name, op := range in.GetOutputs().GetParameters() {
		if _, ok := res.Parameters[name]; ok {
			continue // the ExecutorOutput has the highest priority
		}
		spec, ok := comp.GetOutputDefinitions().GetParameters()[name]
		if !ok {
			return nil, fmt.Errorf("failed to find output parameter name=%q in component spec", name)
		}
		b, err := os.ReadFile(op.GetOutputFile())
		if err != nil {
			return nil, fmt.Errorf("failed to read output parameter name=%q type=%q path=%q: %w (write it to the ExecutorOutput or the file)",
				name, spec.GetParameterType(), op.GetOutputFile(), err)
		}
		v, err := textToValue(string(b), spec.GetParameterType())
		if err != nil {
			return nil, fmt.Errorf("failed to read output parameter name=%q type=%q path=%q: %w", name, spec.GetParameterType(), op.GetOutputFile(), err)
		}
		res.Parameters[name] = v
	}
	for name, list := range in.GetOutputs().GetArtifacts() {
		merged := proto.Clone(list).(*pipelinespec.ArtifactList)
		if src, ok := out.GetArtifacts()[name]; ok && len(src.GetArtifacts()) > 0 && len(merged.GetArtifacts()) > 0 {
			mergeRuntimeArtifact(src.GetArtifacts()[0], merged.GetArtifacts()[0])
		}
		res.Artifacts[name] = merged
	}
	return res, nil
}

func mergeRuntimeArtifact(src, dst *pipelinespec.RuntimeArtifact) {
	if src.GetUri() != "" {
		dst.Uri = src.GetUri()
	}
	if src.GetMetadata() != nil {
		if dst.Metadata == nil {
			dst.Metadata = src.Metadata
		} else {
			for k, v := range src.GetMetadata().GetFields() {
				dst.Metadata.Fields[k] = v
			}
		}
	}
}

// textToValue is KFP's TextToPbValue.
func textToValue(text string, t pipelinespec.ParameterType_ParameterTypeEnum) (*structpb.Value, error) {
	switch t {
	case pipelinespec.ParameterType_STRING:
		return structpb.NewStringValue(text), nil
	case pipelinespec.ParameterType_NUMBER_INTEGER:
		i, err := strconv.ParseInt(strings.TrimSpace(text), 10, 0)
		if err != nil {
			return nil, err
		}
		return structpb.NewNumberValue(float64(i)), nil
	case pipelinespec.ParameterType_NUMBER_DOUBLE:
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 0)
		if err != nil {
			return nil, err
		}
		return structpb.NewNumberValue(f), nil
	case pipelinespec.ParameterType_BOOLEAN:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, err
		}
		return structpb.NewBoolValue(b), nil
	case pipelinespec.ParameterType_LIST, pipelinespec.ParameterType_STRUCT:
		v := &structpb.Value{}
		if err := v.UnmarshalJSON([]byte(text)); err != nil {
			return nil, err
		}
		_, isList := v.GetKind().(*structpb.Value_ListValue)
		_, isStruct := v.GetKind().(*structpb.Value_StructValue)
		if (t == pipelinespec.ParameterType_LIST && !isList) || (t == pipelinespec.ParameterType_STRUCT && !isStruct) {
			return nil, fmt.Errorf("unexpected type")
		}
		return v, nil
	default:
		return nil, fmt.Errorf("unknown type. Expected STRING, NUMBER_INTEGER, NUMBER_DOUBLE, BOOLEAN, LIST or STRUCT")
	}
}
