package localrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"github.com/kubeflow/pipelines/kubernetes_platform/go/kubernetesplatform"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// These tables pin the local runner to the semantics of KFP's backend (master, after 2.17):
// backend/src/v2/driver/resolve.go (inputs), driver/util.go (IfPresent), component/launcher_v2.go
// (defaults, placeholders, ExecutorOutput).

func val(x any) *structpb.Value {
	v, err := structpb.NewValue(x)
	if err != nil {
		panic(err)
	}
	return v
}

func paramSpec(t pipelinespec.ParameterType_ParameterTypeEnum, def any) *pipelinespec.ComponentInputsSpec_ParameterSpec {
	s := &pipelinespec.ComponentInputsSpec_ParameterSpec{ParameterType: t}
	if def != nil {
		s.DefaultValue, s.IsOptional = val(def), true
	}
	return s
}

func testComponent() *pipelinespec.ComponentSpec {
	return &pipelinespec.ComponentSpec{
		InputDefinitions: &pipelinespec.ComponentInputsSpec{Parameters: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{
			"s":        paramSpec(pipelinespec.ParameterType_STRING, nil),
			"i":        paramSpec(pipelinespec.ParameterType_NUMBER_INTEGER, 3),
			"f":        paramSpec(pipelinespec.ParameterType_NUMBER_DOUBLE, 0.25),
			"big":      paramSpec(pipelinespec.ParameterType_NUMBER_DOUBLE, 1e21),
			"b":        paramSpec(pipelinespec.ParameterType_BOOLEAN, true),
			"l":        paramSpec(pipelinespec.ParameterType_LIST, []any{"a", 1}),
			"st":       paramSpec(pipelinespec.ParameterType_STRUCT, map[string]any{"k": "v"}),
			"optional": {ParameterType: pipelinespec.ParameterType_STRING, IsOptional: true},
		}},
		OutputDefinitions: &pipelinespec.ComponentOutputsSpec{
			Parameters: map[string]*pipelinespec.ComponentOutputsSpec_ParameterSpec{
				"out_s": {ParameterType: pipelinespec.ParameterType_STRING},
				"out_i": {ParameterType: pipelinespec.ParameterType_NUMBER_INTEGER},
				"out_b": {ParameterType: pipelinespec.ParameterType_BOOLEAN},
				"out_l": {ParameterType: pipelinespec.ParameterType_LIST},
			},
		},
	}
}

func testExecutorInput() *pipelinespec.ExecutorInput {
	return &pipelinespec.ExecutorInput{
		Inputs: &pipelinespec.ExecutorInput_Inputs{
			ParameterValues: map[string]*structpb.Value{"s": val("hello world"), "i": val(7)},
			Artifacts: map[string]*pipelinespec.ArtifactList{"data": {Artifacts: []*pipelinespec.RuntimeArtifact{{
				Uri: "file:///root/p/run/up/u1/data", Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"rows": val(4)}}}}}},
		},
		Outputs: &pipelinespec.ExecutorInput_Outputs{
			Artifacts: map[string]*pipelinespec.ArtifactList{
				"model":  {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "file:///root/p/run/t/u2/model"}}},
				"remote": {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "minio://mlpipeline/v2/artifacts/p/run/t/u2/remote"}}},
			},
			Parameters: map[string]*pipelinespec.ExecutorInput_OutputParameter{"out_s": {OutputFile: "/root/p/run/t/u2/output-parameters/out_s"}},
			OutputFile: "/root/p/run/t/u2/output_metadata.json",
		},
	}
}

func TestCompileCommand(t *testing.T) {
	in := testExecutorInput()
	withDefaults := WithDefaults(in, testComponent())
	tests := []struct {
		name      string
		command   []string
		args      []string
		want      []string
		wantNotes []string
	}{
		{name: "input parameters: strings as they are, numbers without exponent, lists and structs as JSON, defaults filled in",
			command: []string{"step"},
			args: []string{"{{$.inputs.parameters['s']}}", "{{$.inputs.parameters['i']}}", "{{$.inputs.parameters['f']}}",
				"{{$.inputs.parameters['big']}}", "{{$.inputs.parameters['b']}}", "{{$.inputs.parameters['l']}}", "{{$.inputs.parameters['st']}}"},
			want: []string{"step", "hello world", "7", "0.25", "1000000000000000000000", "true", `["a",1]`, `{"k":"v"}`}},
		{name: "placeholders inside a longer argument are replaced",
			command: []string{"step"}, args: []string{"--s=<{{$.inputs.parameters['s']}}>/{{$.inputs.parameters['i']}}"},
			want: []string{"step", "--s=<hello world>/7"}},
		{name: "artifacts: uri and path (a file:// URI's path is the file; minio:// maps to /minio/)",
			command: []string{"step"},
			args: []string{"{{$.inputs.artifacts['data'].uri}}", "{{$.inputs.artifacts['data'].path}}",
				"{{$.outputs.artifacts['model'].uri}}", "{{$.outputs.artifacts['model'].path}}", "{{$.outputs.artifacts['remote'].path}}"},
			want: []string{"step", "file:///root/p/run/up/u1/data", "/root/p/run/up/u1/data", "file:///root/p/run/t/u2/model", "/root/p/run/t/u2/model",
				"/minio/mlpipeline/v2/artifacts/p/run/t/u2/remote"}},
		{name: "output parameter files",
			command: []string{"step"}, args: []string{"{{$.outputs.parameters['out_s'].output_file}}"},
			want: []string{"step", "/root/p/run/t/u2/output-parameters/out_s"}},
		{name: "the launcher runs command[0] with only {{$}} replaced in it; the rest of command is its arguments",
			command:   []string{"step-{{$.inputs.parameters['s']}}", "--s", "{{$.inputs.parameters['s']}}"},
			want:      []string{"step-{{$.inputs.parameters['s']}}", "--s", "hello world"},
			wantNotes: []string{"{{$.inputs.parameters['s']}} is not resolved"}},
		{name: "IfPresent: Then when the task gives a value, Else (or nothing) when only a default exists",
			command: []string{"step"},
			args: []string{`{"IfPresent": {"InputName": "i", "Then": ["--i", "{{$.inputs.parameters['i']}}"]}}`,
				`{"IfPresent": {"InputName": "f", "Then": ["--f", "{{$.inputs.parameters['f']}}"], "Else": "--no-f"}}`,
				`{"IfPresent": {"InputName": "optional", "Then": "--optional"}}`},
			want: []string{"step", "--i", "7", "--no-f"}},
		{name: "kfp.local's extras: the ExecutorOutput file and artifact metadata, with a note",
			command: []string{"step"},
			args:    []string{"{{$.outputs.output_file}}", "{{$.inputs.artifacts['data'].metadata}}", "{{$.inputs.artifacts['data'].metadata['rows']}}"},
			want:    []string{"step", "/root/p/run/t/u2/output_metadata.json", `{"rows":4}`, "4"},
			wantNotes: []string{"{{$.outputs.output_file}} resolved as kfp.local does",
				"{{$.inputs.artifacts['data'].metadata}} resolved as kfp.local does"}},
		{name: "a parameter without value or default, and Concat, stay as written",
			command:   []string{"step"},
			args:      []string{"{{$.inputs.parameters['optional']}}", `{"Concat": ["a", "{{$.inputs.parameters['s']}}"]}`},
			want:      []string{"step", "{{$.inputs.parameters['optional']}}", `{"Concat": ["a", "hello world"]}`},
			wantNotes: []string{"{{$.inputs.parameters['optional']}} is not resolved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := CompileCommand(in, withDefaults, tt.command, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("argv\n got %q\nwant %q", got, tt.want)
			}
			joined := strings.Join(notes, "\n")
			for _, n := range tt.wantNotes {
				if !strings.Contains(joined, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
			if len(tt.wantNotes) == 0 && len(notes) > 0 {
				t.Errorf("unexpected notes %q", notes)
			}
		})
	}
}

func TestExecutorInputPlaceholderIsTheInputWithDefaults(t *testing.T) {
	in := testExecutorInput()
	withDefaults := WithDefaults(in, testComponent())
	argv, _, err := CompileCommand(in, withDefaults, []string{"step", "--executor-input", "{{$}}"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := &pipelinespec.ExecutorInput{}
	if err := protojson.Unmarshal([]byte(argv[2]), got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, withDefaults) {
		t.Errorf("{{$}} = %v\nwant %v", got, withDefaults)
	}
	params := got.GetInputs().GetParameterValues()
	if params["s"].GetStringValue() != "hello world" || params["i"].GetNumberValue() != 7 || params["f"].GetNumberValue() != 0.25 {
		t.Errorf("parameters %v: want the task's values over the defaults", params)
	}
	if _, ok := params["optional"]; ok {
		t.Errorf("an optional input without default or value must stay out of {{$}}")
	}
	if _, ok := in.GetInputs().GetParameterValues()["f"]; ok {
		t.Errorf("WithDefaults changed its argument")
	}
}

func TestResolveInputs(t *testing.T) {
	run := RunInfo{PipelineName: "p", RunID: "6f1c2a8e-0000-4000-8000-000000000001", RunName: "p-6f1c2", DisplayName: "p run",
		PipelineRoot: "file:///work/pipeline-root", Created: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	params := map[string]*structpb.Value{"count": val(5), "name": val("iris"), "unset": structpb.NewNullValue()}
	done := map[string]*TaskOutputs{"up": {
		Parameters: map[string]*structpb.Value{"n": val(9), "text": val("t")},
		Artifacts: map[string]*pipelinespec.ArtifactList{
			"data":  {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "file:///work/pipeline-root/p/run/up/u/data"}}},
			"model": {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "pvc://claim/models/m/v1"}}},
			// A URI a step set in its ExecutorOutput: it starts with the pipeline root, and leaves it.
			"escape": {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "file:///work/pipeline-root/../../etc/passwd"}}},
		},
	}}
	constant := func(s string) *pipelinespec.TaskInputsSpec_InputParameterSpec {
		return &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_RuntimeValue{
			RuntimeValue: &pipelinespec.ValueOrRuntimeParameter{Value: &pipelinespec.ValueOrRuntimeParameter_Constant{Constant: val(s)}}}}
	}
	fromParam := func(s string) *pipelinespec.TaskInputsSpec_InputParameterSpec {
		return &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter{ComponentInputParameter: s}}
	}
	fromTask := func(task, key string) *pipelinespec.TaskInputsSpec_InputParameterSpec {
		return &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter{
			TaskOutputParameter: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameterSpec{ProducerTask: task, OutputParameterKey: key}}}
	}
	artifact := func(task, key string) *pipelinespec.TaskInputsSpec_InputArtifactSpec {
		return &pipelinespec.TaskInputsSpec_InputArtifactSpec{Kind: &pipelinespec.TaskInputsSpec_InputArtifactSpec_TaskOutputArtifact{
			TaskOutputArtifact: &pipelinespec.TaskInputsSpec_InputArtifactSpec_TaskOutputArtifactSpec{ProducerTask: task, OutputArtifactKey: key}}}
	}
	str := pipelinespec.ParameterType_STRING
	num := pipelinespec.ParameterType_NUMBER_INTEGER
	tests := []struct {
		name    string
		specs   map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec
		params  map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec
		arts    map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec
		want    map[string]any
		wantErr string
	}{
		{name: "pipeline-level placeholders are resolved only as a whole constant",
			specs: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"a": {ParameterType: str}, "b": {ParameterType: str},
				"c": {ParameterType: str}, "d": {ParameterType: str}, "e": {ParameterType: str}, "f": {ParameterType: str}, "g": {ParameterType: str}},
			params: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{
				"a": constant("{{$.pipeline_job_uuid}}"), "b": constant("{{$.pipeline_task_name}}"), "c": constant("{{$.pipeline_job_name}}"),
				"d": constant("{{$.pipeline_job_resource_name}}"), "e": constant("{{$.pipeline_root}}"),
				"f": constant("run-{{$.pipeline_job_uuid}}"), "g": constant("{{$.pipeline_task_uuid}}")},
			want: map[string]any{"a": run.RunID, "b": "train", "c": "p run", "d": "p-6f1c2", "e": "file:///work/pipeline-root",
				"f": "run-{{$.pipeline_job_uuid}}", "g": "1"}},
		{name: "pipeline parameters and upstream outputs; a STRING input given a number gets its text",
			specs: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"count": {ParameterType: num}, "count_text": {ParameterType: str},
				"n": {ParameterType: num}, "text": {ParameterType: str}},
			params: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"count": fromParam("count"), "count_text": fromParam("count"),
				"n": fromTask("up", "n"), "text": fromTask("up", "text")},
			want: map[string]any{"count": 5.0, "count_text": "5", "n": 9.0, "text": "t"}},
		{name: "an optional pipeline parameter without value leaves an optional input out (the launcher fills its default)",
			specs:  map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"x": paramSpec(str, "dflt")},
			params: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"x": fromParam("unset")},
			want:   map[string]any{}},
		{name: "but fails a required one",
			specs:   map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"x": {ParameterType: str}},
			params:  map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"x": fromParam("unset")},
			wantErr: "the resolved input parameter is null"},
		{name: "a required input the task does not give",
			specs:   map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"x": {ParameterType: str}},
			wantErr: `neither value nor default value provided for non-optional parameter "x"`},
		{name: "a number input given a string",
			specs:   map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"count": {ParameterType: num}},
			params:  map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"count": fromParam("name")},
			wantErr: `input parameter "count" type mismatch: expect NUMBER_INTEGER, got string`},
		{name: "an upstream output that does not exist",
			specs:   map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{"x": {ParameterType: str}},
			params:  map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"x": fromTask("up", "nope")},
			wantErr: `task up has no output parameter "nope"`},
		{name: "an input artifact from upstream",
			arts: map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec{"data": artifact("up", "data")},
			want: map[string]any{}},
		{name: "a pvc:// input artifact fails as it fails in KFP",
			arts:    map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec{"model": artifact("up", "model")},
			wantErr: `unsupported Cloud bucket: "pvc://claim/models/m/v1"`},
		{name: "an input artifact whose URI leaves the pipeline root",
			arts:    map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec{"data": artifact("up", "escape")},
			wantErr: `input artifact "file:///work/pipeline-root/../../etc/passwd": /etc/passwd is outside /work/pipeline-root`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &pipelinespec.PipelineTaskSpec{Inputs: &pipelinespec.TaskInputsSpec{Parameters: tt.params, Artifacts: tt.arts}}
			comp := &pipelinespec.ComponentSpec{InputDefinitions: &pipelinespec.ComponentInputsSpec{Parameters: tt.specs}}
			got, err := ResolveInputs(run, params, "train", task, comp, done)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := valuesToAny(got.GetParameterValues()); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("parameters\n got %v\nwant %v", g, tt.want)
			}
			for name := range tt.arts {
				if len(got.GetArtifacts()[name].GetArtifacts()) != 1 {
					t.Errorf("artifact %s: %v", name, got.GetArtifacts())
				}
			}
		})
	}
}

func TestProvisionOutputs(t *testing.T) {
	run := RunInfo{PipelineName: "p", RunID: "r1", PipelineRoot: "file:///w/pipeline-root/"}
	outs, root, err := ProvisionOutputs(run, "train", &pipelinespec.ComponentOutputsSpec{
		Artifacts: map[string]*pipelinespec.ComponentOutputsSpec_ArtifactSpec{"model": {ArtifactType: &pipelinespec.ArtifactTypeSchema{
			Kind: &pipelinespec.ArtifactTypeSchema_SchemaTitle{SchemaTitle: "system.Model"}}}},
		Parameters: map[string]*pipelinespec.ComponentOutputsSpec_ParameterSpec{"uri": {ParameterType: pipelinespec.ParameterType_STRING}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(root, "/w/pipeline-root/p/r1/train/") || len(filepath.Base(root)) != 36 {
		t.Fatalf("task root %s: want <root>/<pipeline>/<run>/<task>/<uuid>", root)
	}
	a := outs.GetArtifacts()["model"].GetArtifacts()[0]
	if a.GetUri() != "file://"+root+"/model" || a.GetName() != "model" || a.GetType().GetSchemaTitle() != "system.Model" {
		t.Errorf("artifact %v", a)
	}
	if outs.GetOutputFile() != root+"/output_metadata.json" || outs.GetParameters()["uri"].GetOutputFile() != root+"/output-parameters/uri" {
		t.Errorf("outputs %v", outs)
	}
}

func TestPipelineParameters(t *testing.T) {
	spec := &pipelinespec.PipelineSpec{Root: &pipelinespec.ComponentSpec{InputDefinitions: &pipelinespec.ComponentInputsSpec{
		Parameters: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{
			"workers":  paramSpec(pipelinespec.ParameterType_NUMBER_INTEGER, 2),
			"fraction": paramSpec(pipelinespec.ParameterType_NUMBER_DOUBLE, 0.2),
			"gpu":      paramSpec(pipelinespec.ParameterType_BOOLEAN, false),
			"params":   paramSpec(pipelinespec.ParameterType_STRUCT, map[string]any{}),
			"name":     {ParameterType: pipelinespec.ParameterType_STRING},
			"note":     {ParameterType: pipelinespec.ParameterType_STRING, IsOptional: true},
		}}}}
	tests := []struct {
		overrides map[string]string
		want      map[string]any
		wantErr   string
	}{
		{overrides: map[string]string{"name": "iris"},
			want: map[string]any{"workers": 2.0, "fraction": 0.2, "gpu": false, "params": map[string]any{}, "name": "iris", "note": nil}},
		{overrides: map[string]string{"name": "x", "workers": "4", "fraction": "0.5", "gpu": "true", "params": `{"eta":"0.3"}`, "note": "n"},
			want: map[string]any{"workers": 4.0, "fraction": 0.5, "gpu": true, "params": map[string]any{"eta": "0.3"}, "name": "x", "note": "n"}},
		{overrides: map[string]string{}, wantErr: "pipeline parameters without a value or default: name"},
		{overrides: map[string]string{"name": "x", "wokers": "3"},
			wantErr: `unknown pipeline parameter "wokers"; the pipeline's parameters are: fraction, gpu, name, note, params, workers`},
		{overrides: map[string]string{"name": "x", "workers": "2.5"}, wantErr: `pipeline parameter workers: want an integer (NUMBER_INTEGER), got "2.5"`},
		{overrides: map[string]string{"name": "x", "params": "[1]"}, wantErr: `want a JSON struct`},
		// 2^53+1 has no float64 of its own: it would reach the step as 2^53.
		{overrides: map[string]string{"name": "x", "workers": "9007199254740993"},
			wantErr: `pipeline parameter workers: want an integer (NUMBER_INTEGER) from -9007199254740992 to 9007199254740992, got "9007199254740993"`},
		{overrides: map[string]string{"name": "x", "workers": "99999999999999999999"},
			wantErr: `pipeline parameter workers: want an integer (NUMBER_INTEGER) from -9007199254740992 to 9007199254740992, got "99999999999999999999"`},
	}
	for _, tt := range tests {
		got, err := PipelineParameters(spec, tt.overrides)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err %v, want %q", tt.overrides, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.overrides, err)
			continue
		}
		if g := valuesToAny(got); !reflect.DeepEqual(g, tt.want) {
			t.Errorf("%v:\n got %v\nwant %v", tt.overrides, g, tt.want)
		}
	}
	if _, err := ParseOverrides([]string{"a=1", "b"}); err == nil {
		t.Error("ParseOverrides accepted a pair without =")
	}
	if got, _ := ParseOverrides([]string{"a=x=y"}); got["a"] != "x=y" {
		t.Errorf("ParseOverrides: %v", got)
	}
}

func TestOrder(t *testing.T) {
	task := func(deps ...string) *pipelinespec.PipelineTaskSpec {
		return &pipelinespec.PipelineTaskSpec{DependentTasks: deps}
	}
	fromTask := &pipelinespec.PipelineTaskSpec{Inputs: &pipelinespec.TaskInputsSpec{
		Parameters: map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{"x": {Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter{
			TaskOutputParameter: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameterSpec{ProducerTask: "train", OutputParameterKey: "uri"}}}},
		Artifacts: map[string]*pipelinespec.TaskInputsSpec_InputArtifactSpec{"d": {Kind: &pipelinespec.TaskInputsSpec_InputArtifactSpec_TaskOutputArtifact{
			TaskOutputArtifact: &pipelinespec.TaskInputsSpec_InputArtifactSpec_TaskOutputArtifactSpec{ProducerTask: "prepare", OutputArtifactKey: "d"}}}},
	}}
	tests := []struct {
		tasks   map[string]*pipelinespec.PipelineTaskSpec
		want    string
		wantErr string
	}{
		{tasks: map[string]*pipelinespec.PipelineTaskSpec{"evaluate": task("deploy", "prepare"), "deploy": fromTask, "train": task("prepare"), "prepare": task()},
			want: "prepare train deploy evaluate"},
		{tasks: map[string]*pipelinespec.PipelineTaskSpec{"b": task(), "a": task(), "c": task("a")}, want: "a b c"},
		{tasks: map[string]*pipelinespec.PipelineTaskSpec{"a": task("b"), "b": task("a"), "c": task()}, wantErr: "dependency cycle among tasks a, b"},
		{tasks: map[string]*pipelinespec.PipelineTaskSpec{"a": task("ghost")}, wantErr: `depends on task "ghost"`},
	}
	for _, tt := range tests {
		got, err := Order(&pipelinespec.DagSpec{Tasks: tt.tasks})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("order %v (%v), want %s", got, err, tt.want)
		}
	}
}

func TestReadExecutorOutputIsStrict(t *testing.T) {
	dir := t.TempDir()
	if out, err := ReadExecutorOutput(filepath.Join(dir, "none.json")); err != nil || len(out.GetParameterValues()) != 0 {
		t.Errorf("no file: %v %v, want an empty output", out, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"parameterValues": {"a": "x"}, "artifacts": {"m": {"artifacts": [{"uri": "u", "customPath": "/p"}]}}}`), 0o644)
	if _, err := ReadExecutorOutput(bad); err == nil || !strings.Contains(err.Error(), "customPath") {
		t.Errorf("unknown field: err %v, want it named", err)
	}
}

func TestCollectOutputs(t *testing.T) {
	dir := t.TempDir()
	comp := testComponent()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if text != "" {
			os.WriteFile(p, []byte(text), 0o644)
		}
		return p
	}
	in := &pipelinespec.ExecutorInput{Outputs: &pipelinespec.ExecutorInput_Outputs{
		Parameters: map[string]*pipelinespec.ExecutorInput_OutputParameter{
			"out_s": {OutputFile: file("out_s", "from the file")},
			"out_i": {OutputFile: file("out_i", " 42\n")},
			"out_b": {OutputFile: file("out_b", "true")},
			"out_l": {OutputFile: file("out_l", `[1, "a"]`)},
		},
		Artifacts: map[string]*pipelinespec.ArtifactList{
			"model": {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "/r/model", Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"a": val(1), "b": val(2)}}}}},
			"plain": {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "/r/plain"}}},
		},
	}}
	out := &pipelinespec.ExecutorOutput{
		ParameterValues: map[string]*structpb.Value{"out_s": val("from the ExecutorOutput")},
		Artifacts: map[string]*pipelinespec.ArtifactList{"model": {Artifacts: []*pipelinespec.RuntimeArtifact{{
			Uri: "pvc://claim/models/m/v1", Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"b": val(3), "c": val(4)}}}}}},
	}
	got, err := CollectOutputs(in, out, comp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"out_s": "from the ExecutorOutput", "out_i": 42.0, "out_b": true, "out_l": []any{1.0, "a"}}
	if g := valuesToAny(got.Parameters); !reflect.DeepEqual(g, want) {
		t.Errorf("parameters\n got %v\nwant %v", g, want)
	}
	m := got.Artifacts["model"].GetArtifacts()[0]
	if m.GetUri() != "pvc://claim/models/m/v1" || !reflect.DeepEqual(m.GetMetadata().AsMap(), map[string]any{"a": 1.0, "b": 3.0, "c": 4.0}) {
		t.Errorf("merged model artifact %v", m)
	}
	if got.Artifacts["plain"].GetArtifacts()[0].GetUri() != "/r/plain" {
		t.Errorf("plain artifact %v", got.Artifacts["plain"])
	}
	if in.GetOutputs().GetArtifacts()["model"].GetArtifacts()[0].GetUri() != "/r/model" {
		t.Error("CollectOutputs changed the ExecutorInput")
	}

	in.Outputs.Parameters["out_i"].OutputFile = file("bad_i", "4.5")
	if _, err := CollectOutputs(in, &pipelinespec.ExecutorOutput{}, comp); err == nil || !strings.Contains(err.Error(), `name="out_i" type="NUMBER_INTEGER"`) {
		t.Errorf("a non-integer in an integer's file: err %v", err)
	}
	in.Outputs.Parameters["out_i"].OutputFile = file("missing", "")
	if _, err := CollectOutputs(in, &pipelinespec.ExecutorOutput{}, comp); err == nil || !strings.Contains(err.Error(), "failed to read output parameter") {
		t.Errorf("a missing file: err %v", err)
	}
}

func TestParsePackage(t *testing.T) {
	base, err := os.ReadFile("testdata/tiny-pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePackage(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Executors) != 3 || p.Kubernetes["exec-produce"].GetPvcMount()[0].GetComponentInputParameter() != "claim" {
		t.Errorf("package: executors %d, kubernetes %v", len(p.Executors), p.Kubernetes)
	}
	tests := []struct {
		name, edit, with, wantErr string
	}{
		{"an unknown field in the platform document", "mountPath: /mnt/data\n", "mountPath: /mnt/data\n            readOnly: true\n", `unknown field "readOnly"`},
		{"an unknown field in the IR", "schemaVersion: 2.1.0", "schemaVersion: 2.1.0\nextra: 1", `unknown field "extra"`},
		{"a third document", "", "\n---\nx: 1\n", "3 YAML documents"},
	}
	for _, tt := range tests {
		b := strings.Replace(string(base), tt.edit, tt.with, 1)
		if tt.edit == "" {
			b = string(base) + tt.with
		}
		if _, err := ParsePackage([]byte(b)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestMountClaims(t *testing.T) {
	work := t.TempDir()
	r := &runner{workDir: work}
	r.opts.Executor = &processes{r: r}
	res := &Result{params: map[string]*structpb.Value{"pvc_name": val("models")}}
	comp := &pipelinespec.ComponentSpec{InputDefinitions: &pipelinespec.ComponentInputsSpec{Parameters: map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{
		"pvc_mount_path": paramSpec(pipelinespec.ParameterType_STRING, "/mnt/pvc"),
		"pvc_local_path": paramSpec(pipelinespec.ParameterType_STRING, ""),
		"other":          paramSpec(pipelinespec.ParameterType_STRING, "/mnt/pvc"),
	}}}
	in := &pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: map[string]*structpb.Value{
		"pvc_local_path": val("/mnt/pvc/"),
	}}}
	mounts := []*kubernetesplatform.PvcMount{{PvcReference: &kubernetesplatform.PvcMount_ComponentInputParameter{ComponentInputParameter: "pvc_name"}, MountPath: "/mnt/pvc"}}
	got, claims, notes, err := r.mountClaims("train", mounts, res, in, comp)
	if err != nil {
		t.Fatal(err)
	}
	if claims["/mnt/pvc"] != "models" {
		t.Errorf("claims %v", claims)
	}
	dir := filepath.Join(work, "pvc", "models")
	if got["/mnt/pvc"] != dir {
		t.Errorf("mounts %v", got)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("claim folder: %v", err)
	}
	params := valuesToAny(in.GetInputs().GetParameterValues())
	if params["pvc_mount_path"] != dir || params["pvc_local_path"] != dir || params["other"] != nil {
		t.Errorf("parameters %v: want both claim paths (the default one too) mapped, nothing else", params)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "given as pvc_mount_path, pvc_local_path") {
		t.Errorf("notes %q", notes)
	}

	// A component without such an input gets the folder, and a note that it cannot see it.
	bare := &pipelinespec.ComponentSpec{}
	in = &pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: map[string]*structpb.Value{}}}
	if _, _, notes, err = r.mountClaims("x", mounts, res, in, bare); err != nil || len(notes) != 1 || !strings.Contains(notes[0], "cannot see locally") {
		t.Errorf("notes %q, err %v", notes, err)
	}
	// A pod sees the claim at its mount path: the inputs stay as the package says.
	podRunner := &runner{workDir: t.TempDir()}
	podRunner.opts.Executor = mountingExecutor{}
	in = &pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: map[string]*structpb.Value{}}}
	if _, claims, notes, err = podRunner.mountClaims("train", mounts, res, in, comp); err != nil || len(notes) != 0 || claims["/mnt/pvc"] != "models" || len(in.GetInputs().GetParameterValues()) != 0 {
		t.Errorf("mounting executor: claims %v, notes %q, inputs %v, err %v", claims, notes, in.GetInputs().GetParameterValues(), err)
	}
	// An empty claim fails as in KFP.
	res.params["pvc_name"] = val("")
	if _, _, _, err = r.mountClaims("x", mounts, res, in, bare); err == nil || !strings.Contains(err.Error(), "non-empty string") {
		t.Errorf("empty claim: err %v", err)
	}
}

// mountingExecutor stands for a pod: it sees each claim at its mount path.
type mountingExecutor struct{}

func (mountingExecutor) MountsClaims() bool { return true }
func (mountingExecutor) Execute(context.Context, *Container) (int, error) {
	return -1, errors.New("not run")
}
