// Package kfp is Kubeflow Pipelines' v2 executor contract for a component written in Go: it reads the
// ExecutorInput the launcher passes as {{$}}, gives typed access to input parameters, output artifacts
// and output parameter files, and writes the ExecutorOutput back where the launcher reads it.
//
// KFP's launcher (backend/src/v2/component/launcher_v2.go) parses the ExecutorOutput with strict
// protojson: one unknown field fails the task. So both directions go through the typed
// pipelinespec messages, never hand-written JSON.
//
// Pipeline-level values (the run's UUID, the task's name) are not placeholders a component can use in
// its command line: KFP's driver (backend/src/v2/driver, resolveInputParameter) replaces
// {{$.pipeline_job_uuid}}, {{$.pipeline_job_name}}, {{$.pipeline_job_resource_name}},
// {{$.pipeline_task_name}} and {{$.pipeline_task_uuid}} only when one is the whole constant value of a
// task's input parameter. A pipeline passes them as input parameters; the component reads them here.
package kfp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Executor is one task's executor contract: its input, and the output it builds.
type Executor struct {
	in  *pipelinespec.ExecutorInput
	out *pipelinespec.ExecutorOutput
}

// ParseExecutorInput parses {{$}} (the ExecutorInput as protojson) strictly: an unknown field is an
// error, as it is to KFP's own parsers.
func ParseExecutorInput(data []byte) (*Executor, error) {
	in := &pipelinespec.ExecutorInput{}
	if err := protojson.Unmarshal(data, in); err != nil {
		return nil, fmt.Errorf("parse executor input ({{$}} as protojson): %w", err)
	}
	return &Executor{in: in, out: &pipelinespec.ExecutorOutput{}}, nil
}

// ParseExecutorOutput parses an ExecutorOutput file the way KFP's launcher does (strict protojson).
func ParseExecutorOutput(data []byte) (*pipelinespec.ExecutorOutput, error) {
	out := &pipelinespec.ExecutorOutput{}
	if err := protojson.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("parse executor output: %w", err)
	}
	return out, nil
}

// Input is the parsed ExecutorInput.
func (e *Executor) Input() *pipelinespec.ExecutorInput { return e.in }

// Output is the ExecutorOutput built so far.
func (e *Executor) Output() *pipelinespec.ExecutorOutput { return e.out }

// HasParameter reports whether the input has a value for a parameter (KFP leaves out optional
// parameters without a value).
func (e *Executor) HasParameter(name string) bool {
	_, ok := e.in.GetInputs().GetParameterValues()[name]
	return ok
}

// ParameterNames lists the input parameters that have values, sorted.
func (e *Executor) ParameterNames() []string {
	var names []string
	for k := range e.in.GetInputs().GetParameterValues() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// String returns a string input parameter, or def when it has no value. Numbers and booleans are
// formatted as KFP formats them for a STRING input.
func (e *Executor) String(name, def string) (string, error) {
	v, ok := e.in.GetInputs().GetParameterValues()[name]
	if !ok {
		return def, nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue, nil
	case *structpb.Value_NumberValue:
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64), nil
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue), nil
	case *structpb.Value_NullValue:
		return def, nil
	default:
		return "", fmt.Errorf("input parameter %q: want a string, got %s", name, kindName(v))
	}
}

// MaxExactInteger bounds every integer parameter: KFP carries parameter values as protobuf Values,
// whose numbers are float64s, and those hold every integer exactly only up to 2^53. A larger
// NUMBER_INTEGER would silently become a neighbouring value.
const MaxExactInteger = 1 << 53

// Int returns an integer input parameter (a whole number, or a string holding one) within
// ±MaxExactInteger, or def.
func (e *Executor) Int(name string, def int64) (int64, error) {
	return e.IntIn(name, def, -MaxExactInteger, MaxExactInteger)
}

// IntIn returns an integer input parameter within [lo, hi], or def when it has no value: the one
// conversion of an integer input, so a value its Go type cannot hold (workers=4294967296 as an
// int32) is an error naming the parameter, its value and the range, never a wrapped number.
func (e *Executor) IntIn(name string, def, lo, hi int64) (int64, error) {
	v, ok := e.in.GetInputs().GetParameterValues()[name]
	if !ok {
		return def, nil
	}
	lo, hi = max(lo, -MaxExactInteger), min(hi, MaxExactInteger)
	outOfRange := func(text string) error {
		return fmt.Errorf("input parameter %q: want an integer from %d to %d, got %s", name, lo, hi, text)
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		f := k.NumberValue
		text := strconv.FormatFloat(f, 'f', -1, 64)
		if math.Abs(f) >= 1e21 {
			text = strconv.FormatFloat(f, 'g', -1, 64)
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("input parameter %q: want an integer, got %s", name, text)
		}
		// Compared as float64s, which hold lo and hi exactly, before any conversion.
		if f < float64(lo) || f > float64(hi) {
			return 0, outOfRange(text)
		}
		return int64(f), nil
	case *structpb.Value_StringValue:
		text := strings.TrimSpace(k.StringValue)
		if text == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return 0, outOfRange(strconv.Quote(k.StringValue))
		}
		if err != nil {
			return 0, fmt.Errorf("input parameter %q: want an integer, got %q", name, k.StringValue)
		}
		if n < lo || n > hi {
			return 0, outOfRange(strconv.Quote(k.StringValue))
		}
		return n, nil
	case *structpb.Value_NullValue:
		return def, nil
	default:
		return 0, fmt.Errorf("input parameter %q: want an integer, got %s", name, kindName(v))
	}
}

// Float returns a number input parameter (or a string holding one), or def.
func (e *Executor) Float(name string, def float64) (float64, error) {
	v, ok := e.in.GetInputs().GetParameterValues()[name]
	if !ok {
		return def, nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return k.NumberValue, nil
	case *structpb.Value_StringValue:
		if strings.TrimSpace(k.StringValue) == "" {
			return def, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(k.StringValue), 64)
		if err != nil {
			return 0, fmt.Errorf("input parameter %q: want a number, got %q", name, k.StringValue)
		}
		return f, nil
	case *structpb.Value_NullValue:
		return def, nil
	default:
		return 0, fmt.Errorf("input parameter %q: want a number, got %s", name, kindName(v))
	}
}

// Struct returns a STRUCT input parameter as a map of its values formatted as strings (numbers as
// KFP formats them, nested lists and structs as JSON); nil when it has no value.
func (e *Executor) Struct(name string) (map[string]string, error) {
	v, ok := e.in.GetInputs().GetParameterValues()[name]
	if !ok {
		return nil, nil
	}
	var s *structpb.Struct
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		s = k.StructValue
	case *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_StringValue:
		if strings.TrimSpace(k.StringValue) == "" {
			return nil, nil
		}
		s = &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(k.StringValue), s); err != nil {
			return nil, fmt.Errorf("input parameter %q: want a JSON object, got %q: %v", name, k.StringValue, err)
		}
	default:
		return nil, fmt.Errorf("input parameter %q: want a struct, got %s", name, kindName(v))
	}
	out := make(map[string]string, len(s.GetFields()))
	for key, fv := range s.GetFields() {
		switch fk := fv.GetKind().(type) {
		case *structpb.Value_StringValue:
			out[key] = fk.StringValue
		case *structpb.Value_NumberValue:
			out[key] = strconv.FormatFloat(fk.NumberValue, 'f', -1, 64)
		case *structpb.Value_BoolValue:
			out[key] = strconv.FormatBool(fk.BoolValue)
		default:
			b, err := protojson.Marshal(fv)
			if err != nil {
				return nil, fmt.Errorf("input parameter %q key %q: %w", name, key, err)
			}
			out[key] = string(b)
		}
	}
	return out, nil
}

// JSON decodes input parameter name (a struct, a list, or a string holding either as JSON) into
// out, refusing fields out does not have, and reports whether the input was given (not null,
// not empty). It is for inputs that are an API's own types (a pod's tolerations, say).
func (e *Executor) JSON(name string, out any) (bool, error) {
	v, ok := e.in.GetInputs().GetParameterValues()[name]
	if !ok {
		return false, nil
	}
	var raw []byte
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return false, nil
	case *structpb.Value_StringValue:
		if strings.TrimSpace(k.StringValue) == "" {
			return false, nil
		}
		raw = []byte(k.StringValue)
	case *structpb.Value_StructValue, *structpb.Value_ListValue:
		b, err := protojson.Marshal(v)
		if err != nil {
			return false, fmt.Errorf("input parameter %q: %w", name, err)
		}
		raw = b
	default:
		return false, fmt.Errorf("input parameter %q: want a struct or a list, got %s", name, kindName(v))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return false, fmt.Errorf("input parameter %q: %s: %v", name, raw, err)
	}
	return true, nil
}

func kindName(v *structpb.Value) string {
	switch v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return "a string"
	case *structpb.Value_NumberValue:
		return "a number"
	case *structpb.Value_BoolValue:
		return "a boolean"
	case *structpb.Value_ListValue:
		return "a list"
	case *structpb.Value_StructValue:
		return "a struct"
	default:
		return "no value"
	}
}

// InputArtifactURI is the URI of the first artifact given for input artifact name, and whether
// one was given.
func (e *Executor) InputArtifactURI(name string) (string, bool) {
	l := e.in.GetInputs().GetArtifacts()[name]
	if l == nil || len(l.GetArtifacts()) == 0 || l.GetArtifacts()[0].GetUri() == "" {
		return "", false
	}
	return l.GetArtifacts()[0].GetUri(), true
}

// OutputArtifact returns the output artifact KFP prepared for name (its URI and type).
func (e *Executor) OutputArtifact(name string) (*pipelinespec.RuntimeArtifact, error) {
	l, ok := e.in.GetOutputs().GetArtifacts()[name]
	if !ok || len(l.GetArtifacts()) == 0 {
		return nil, fmt.Errorf("executor input has no output artifact %q (is it declared in the component's outputDefinitions?)", name)
	}
	return l.GetArtifacts()[0], nil
}

// OutputArtifactPath is the local path of an output artifact, as {{$.outputs.artifacts['x'].path}}
// resolves it: the launcher maps minio://, s3:// and gs:// URIs to /minio/, /s3/ and /gcs/.
func (e *Executor) OutputArtifactPath(name string) (string, error) {
	a, err := e.OutputArtifact(name)
	if err != nil {
		return "", err
	}
	return LocalPathForURI(a.GetUri())
}

// LocalPathForURI maps an artifact URI to the local path KFP's launcher uses for it. A file://
// URI (what a run outside KFP, such as a local runner or a test, gives its artifacts) is its path.
func LocalPathForURI(uri string) (string, error) {
	if p, ok := strings.CutPrefix(uri, "file://"); ok && strings.HasPrefix(p, "/") {
		return p, nil
	}
	for prefix, local := range map[string]string{"minio://": "/minio/", "s3://": "/s3/", "gs://": "/gcs/"} {
		if strings.HasPrefix(uri, prefix) {
			return local + strings.TrimPrefix(uri, prefix), nil
		}
	}
	return "", fmt.Errorf("artifact URI %q has no local path (only minio://, s3://, gs:// and file:///path do)", uri)
}

// OutputParameterFile is the file KFP reads an output parameter from
// ({{$.outputs.parameters['x'].output_file}}).
func (e *Executor) OutputParameterFile(name string) (string, error) {
	p, ok := e.in.GetOutputs().GetParameters()[name]
	if !ok || p.GetOutputFile() == "" {
		return "", fmt.Errorf("executor input has no output parameter %q (is it declared in the component's outputDefinitions?)", name)
	}
	return p.GetOutputFile(), nil
}

// OutputFile is where the ExecutorOutput goes (outputs.outputFile of the input).
func (e *Executor) OutputFile() string { return e.in.GetOutputs().GetOutputFile() }

// SetParameter sets an output parameter: a string, bool, a number (int, int32, int64, float64), a
// []any or a map[string]any.
func (e *Executor) SetParameter(name string, value any) error {
	if _, err := e.OutputParameterFile(name); err != nil {
		return err
	}
	v, err := structpb.NewValue(value)
	if err != nil {
		return fmt.Errorf("output parameter %q: %w", name, err)
	}
	if e.out.ParameterValues == nil {
		e.out.ParameterValues = map[string]*structpb.Value{}
	}
	e.out.ParameterValues[name] = v
	return nil
}

// SetArtifact records an output artifact's URI (empty keeps the one KFP chose) and metadata (merged
// into the artifact's by KFP; for system.Metrics the scalar values the UI shows).
func (e *Executor) SetArtifact(name, uri string, metadata map[string]any) error {
	if _, err := e.OutputArtifact(name); err != nil {
		return err
	}
	md, err := structpb.NewStruct(metadata)
	if err != nil {
		return fmt.Errorf("output artifact %q metadata: %w", name, err)
	}
	if e.out.Artifacts == nil {
		e.out.Artifacts = map[string]*pipelinespec.ArtifactList{}
	}
	e.out.Artifacts[name] = &pipelinespec.ArtifactList{Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: uri, Metadata: md}}}
	return nil
}

// WriteOutput writes the ExecutorOutput to outputs.outputFile, and each output parameter also to its
// output_file (as text: strings as they are, other values as JSON), which older launchers read.
func (e *Executor) WriteOutput() error {
	path := e.OutputFile()
	if path == "" {
		return fmt.Errorf("executor input has no outputs.outputFile: nowhere to write the executor output")
	}
	for name, v := range e.out.GetParameterValues() {
		file, err := e.OutputParameterFile(name)
		if err != nil {
			return err
		}
		text := v.GetStringValue()
		if _, isString := v.GetKind().(*structpb.Value_StringValue); !isString {
			b, err := protojson.Marshal(v)
			if err != nil {
				return fmt.Errorf("output parameter %q: %w", name, err)
			}
			text = string(b)
		}
		if err := writeFile(file, []byte(text)); err != nil {
			return fmt.Errorf("write output parameter %q: %w", name, err)
		}
	}
	b, err := protojson.Marshal(e.out)
	if err != nil {
		return fmt.Errorf("encode executor output: %w", err)
	}
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("write executor output: %w", err)
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
