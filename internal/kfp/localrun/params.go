package localrun

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
)

// PipelineParameters are the run's pipeline parameters as KFP's API server and Argo compiler make
// them (backend/src/v2/compiler/argocompiler/argo.go): the overrides, then each root input's
// default, then null for an optional input without one. An override must name a root input and
// parse as its parameterType; a required input without a value is an error.
func PipelineParameters(spec *pipelinespec.PipelineSpec, overrides map[string]string) (map[string]*structpb.Value, error) {
	defs := spec.GetRoot().GetInputDefinitions().GetParameters()
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	values := map[string]*structpb.Value{}
	for name, text := range overrides {
		def, ok := defs[name]
		if !ok {
			return nil, fmt.Errorf("unknown pipeline parameter %q; the pipeline's parameters are: %s", name, strings.Join(names, ", "))
		}
		v, err := ParseParameter(text, def.GetParameterType())
		if err != nil {
			return nil, fmt.Errorf("pipeline parameter %s: %w", name, err)
		}
		values[name] = v
	}
	var missing []string
	for _, name := range names {
		if _, ok := values[name]; ok {
			continue
		}
		def := defs[name]
		switch {
		case def.GetDefaultValue() != nil:
			values[name] = def.GetDefaultValue()
		case def.GetIsOptional():
			values[name] = structpb.NewNullValue()
		default:
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("pipeline parameters without a value or default: %s (set them with --param name=value)", strings.Join(missing, ", "))
	}
	return values, nil
}

// ParseParameter parses a command-line value as a parameter of type t: STRING as it is, numbers,
// booleans, and LIST or STRUCT as JSON.
func ParseParameter(text string, t pipelinespec.ParameterType_ParameterTypeEnum) (*structpb.Value, error) {
	switch t {
	case pipelinespec.ParameterType_STRING:
		return structpb.NewStringValue(text), nil
	case pipelinespec.ParameterType_NUMBER_INTEGER:
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if errors.Is(err, strconv.ErrRange) || err == nil && (n < -kfp.MaxExactInteger || n > kfp.MaxExactInteger) {
			// The value travels as a protobuf number (a float64): beyond 2^53 it would change.
			return nil, fmt.Errorf("want an integer (NUMBER_INTEGER) from %d to %d, got %q", -kfp.MaxExactInteger, kfp.MaxExactInteger, text)
		}
		if err != nil {
			return nil, fmt.Errorf("want an integer (NUMBER_INTEGER), got %q", text)
		}
		return structpb.NewNumberValue(float64(n)), nil
	case pipelinespec.ParameterType_NUMBER_DOUBLE:
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number (NUMBER_DOUBLE), got %q", text)
		}
		return structpb.NewNumberValue(f), nil
	case pipelinespec.ParameterType_BOOLEAN:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("want true or false (BOOLEAN), got %q", text)
		}
		return structpb.NewBoolValue(b), nil
	case pipelinespec.ParameterType_LIST, pipelinespec.ParameterType_STRUCT:
		v := &structpb.Value{}
		if err := v.UnmarshalJSON([]byte(text)); err != nil {
			return nil, fmt.Errorf("want JSON (%s), got %q: %v", t, text, err)
		}
		_, isList := v.GetKind().(*structpb.Value_ListValue)
		_, isStruct := v.GetKind().(*structpb.Value_StructValue)
		if (t == pipelinespec.ParameterType_LIST && !isList) || (t == pipelinespec.ParameterType_STRUCT && !isStruct) {
			return nil, fmt.Errorf("want a JSON %s, got %q", strings.ToLower(t.String()), text)
		}
		return v, nil
	default:
		return nil, fmt.Errorf("parameter type %s cannot be set from the command line", t)
	}
}

// ParamFlags collects a repeated command-line flag (--param name=value, --claim-dir claim=DIR) in
// order, as a flag.Value.
type ParamFlags []string

func (p *ParamFlags) String() string     { return strings.Join(*p, ",") }
func (p *ParamFlags) Set(v string) error { *p = append(*p, v); return nil }

// ParseOverrides parses name=value pairs (--param flags).
func ParseOverrides(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range pairs {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--param %q: want name=value", kv)
		}
		name = strings.TrimSpace(name)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--param %s given twice", name)
		}
		out[name] = value
	}
	return out, nil
}
