package kfpapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParameterTypes are the pipeline parameters of a version's pipeline_spec with their KFP types
// (STRING, NUMBER_INTEGER, NUMBER_DOUBLE, BOOLEAN, STRUCT, LIST). The server returns the spec
// itself, or {pipeline_spec, platform_spec} for a package with a platform document.
func ParameterTypes(pipelineSpec json.RawMessage) (map[string]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(pipelineSpec, &doc); err != nil {
		return nil, fmt.Errorf("pipeline_spec: %w", err)
	}
	if inner, ok := doc["pipeline_spec"]; ok {
		doc = nil
		if err := json.Unmarshal(inner, &doc); err != nil {
			return nil, fmt.Errorf("pipeline_spec.pipeline_spec: %w", err)
		}
	}
	var root struct {
		InputDefinitions struct {
			Parameters map[string]struct {
				ParameterType string `json:"parameterType"`
			} `json:"parameters"`
		} `json:"inputDefinitions"`
	}
	if r, ok := doc["root"]; ok {
		if err := json.Unmarshal(r, &root); err != nil {
			return nil, fmt.Errorf("pipeline_spec.root: %w", err)
		}
	} else {
		return nil, fmt.Errorf("pipeline_spec has no root")
	}
	types := map[string]string{}
	for name, p := range root.InputDefinitions.Parameters {
		types[name] = p.ParameterType
	}
	return types, nil
}

// TypedParameters turns key=value pairs into run parameter values of the types the pipeline
// declares: "3" is the number 3 for a NUMBER_INTEGER parameter and the string "3" for a STRING
// one. With types nil (the spec is unknown) a value that parses as a number, a boolean or a JSON
// object or array is sent as one, else as a string.
func TypedParameters(pairs []string, types map[string]string) (map[string]any, error) {
	params := map[string]any{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("parameter %q: want key=value", kv)
		}
		if types == nil {
			params[k] = guess(v)
			continue
		}
		t, known := types[k]
		if !known {
			names := make([]string, 0, len(types))
			for n := range types {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("the pipeline has no parameter %q (it has: %s)", k, strings.Join(names, ", "))
		}
		val, err := typed(t, v)
		if err != nil {
			return nil, fmt.Errorf("parameter %s is %s: %w", k, t, err)
		}
		params[k] = val
	}
	return params, nil
}

func typed(t, v string) (any, error) {
	switch t {
	case "NUMBER_INTEGER":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", v)
		}
		return n, nil
	case "NUMBER_DOUBLE":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		return f, nil
	case "BOOLEAN":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", v)
		}
		return b, nil
	case "STRUCT":
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
			return nil, fmt.Errorf("%q is not a JSON object", v)
		}
		return m, nil
	case "LIST":
		var l []any
		if err := json.Unmarshal([]byte(v), &l); err != nil || l == nil {
			return nil, fmt.Errorf("%q is not a JSON array", v)
		}
		return l, nil
	}
	return v, nil
}

func guess(v string) any {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			return x
		}
	}
	return v
}
