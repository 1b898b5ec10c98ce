package kfp

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/types/known/structpb"
)

// executorInput is what KFP's driver hands a task ({{$}}), shaped as launcher_v2 marshals it.
func executorInput(dir string) string {
	return `{
  "inputs": {"parameterValues": {
    "run_id": "4b0c5a34-2f0e-4c55-9a39-0d8a2c1b7e11",
    "workers": 2,
    "eta": 0.3,
    "rounds_text": "20",
    "flag": true,
    "params": {"max_bin": 64, "grow_policy": "lossguide"}
  }},
  "outputs": {
    "parameters": {"model_uri": {"outputFile": "` + dir + `/model_uri"}},
    "artifacts": {
      "model": {"artifacts": [{"name": "model", "type": {"schemaTitle": "system.Model", "schemaVersion": "0.0.1"},
        "uri": "minio://mlpipeline/v2/artifacts/p/run/launch/uuid/model"}]},
      "metrics": {"artifacts": [{"name": "metrics", "type": {"schemaTitle": "system.Metrics", "schemaVersion": "0.0.1"},
        "uri": "minio://mlpipeline/v2/artifacts/p/run/launch/uuid/metrics"}]}
    },
    "outputFile": "` + dir + `/out/executor_output.json"
  }
}`
}

func TestParametersTyped(t *testing.T) {
	e, err := ParseExecutorInput([]byte(executorInput(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		get  func() (any, error)
		want any
	}{
		{"string", func() (any, error) { return e.String("run_id", "") }, "4b0c5a34-2f0e-4c55-9a39-0d8a2c1b7e11"},
		{"string default", func() (any, error) { return e.String("missing", "d") }, "d"},
		{"number as string", func() (any, error) { return e.String("eta", "") }, "0.3"},
		{"int", func() (any, error) { return e.Int("workers", 0) }, int64(2)},
		{"int from string", func() (any, error) { return e.Int("rounds_text", 0) }, int64(20)},
		{"int default", func() (any, error) { return e.Int("missing", 7) }, int64(7)},
		{"float", func() (any, error) { return e.Float("eta", 0) }, 0.3},
		{"bool as string", func() (any, error) { return e.String("flag", "") }, "true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if err != nil || got != tc.want {
				t.Errorf("got %v (%T), %v; want %v (%T)", got, got, err, tc.want, tc.want)
			}
		})
	}
	if _, err := e.Int("eta", 0); err == nil || !strings.Contains(err.Error(), `"eta"`) {
		t.Errorf("Int(eta=0.3) error = %v, want one naming the parameter", err)
	}
	m, err := e.Struct("params")
	if err != nil || m["max_bin"] != "64" || m["grow_policy"] != "lossguide" {
		t.Errorf("Struct(params) = %v, %v", m, err)
	}
	if p, err := e.OutputArtifactPath("model"); err != nil || p != "/minio/mlpipeline/v2/artifacts/p/run/launch/uuid/model" {
		t.Errorf("OutputArtifactPath(model) = %q, %v", p, err)
	}
	if _, err := e.OutputArtifact("nope"); err == nil {
		t.Error("OutputArtifact(nope): want error")
	}
}

// TestRoundTrip writes outputs and reads them back the way KFP's launcher does.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	e, err := ParseExecutorInput([]byte(executorInput(dir)))
	if err != nil {
		t.Fatal(err)
	}
	// {{$}} is what the launcher marshals; parsing it again gives the same message.
	b, err := protojson.Marshal(e.Input())
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseExecutorInput(b)
	if err != nil || !proto.Equal(again.Input(), e.Input()) {
		t.Fatalf("executor input round trip: %v", err)
	}

	if err := e.SetParameter("model_uri", "pvc://claim/models/iris/v1"); err != nil {
		t.Fatal(err)
	}
	if err := e.SetArtifact("model", "pvc://claim/models/iris/v1", map[string]any{"objective": "multi:softprob", "rounds": 20}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetArtifact("metrics", "", map[string]any{"eval-mlogloss": 0.25}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetParameter("undeclared", "x"); err == nil {
		t.Error("SetParameter(undeclared): want error")
	}
	if err := e.WriteOutput(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "out", "executor_output.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseExecutorOutput(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := &pipelinespec.ExecutorOutput{
		ParameterValues: map[string]*structpb.Value{"model_uri": structpb.NewStringValue("pvc://claim/models/iris/v1")},
		Artifacts: map[string]*pipelinespec.ArtifactList{
			"model":   {Artifacts: []*pipelinespec.RuntimeArtifact{{Uri: "pvc://claim/models/iris/v1", Metadata: mustStruct(t, map[string]any{"objective": "multi:softprob", "rounds": 20})}}},
			"metrics": {Artifacts: []*pipelinespec.RuntimeArtifact{{Metadata: mustStruct(t, map[string]any{"eval-mlogloss": 0.25})}}},
		},
	}
	if !proto.Equal(out, want) {
		t.Errorf("executor output = %v\nwant %v", out, want)
	}
	if p, _ := os.ReadFile(filepath.Join(dir, "model_uri")); string(p) != "pvc://claim/models/iris/v1" {
		t.Errorf("model_uri output file = %q", p)
	}
	// Only fields KFP knows: no name/type echoed back, no deprecated maps.
	for _, field := range []string{`"parameters"`, `"type"`, `"name"`} {
		if strings.Contains(string(raw), field) {
			t.Errorf("executor output has %s: %s", field, raw)
		}
	}
}

func TestUnknownFieldRejected(t *testing.T) {
	tests := []struct {
		name, doc string
		parse     func([]byte) error
	}{
		{"input top level", `{"inputs": {}, "extra": 1}`, func(b []byte) error { _, err := ParseExecutorInput(b); return err }},
		{"input artifact", `{"outputs": {"artifacts": {"m": {"artifacts": [{"uri": "x", "size": 3}]}}}}`, func(b []byte) error { _, err := ParseExecutorInput(b); return err }},
		{"output top level", `{"parameterValues": {"a": "b"}, "status": "ok"}`, func(b []byte) error { _, err := ParseExecutorOutput(b); return err }},
		{"output artifact", `{"artifacts": {"model": {"artifacts": [{"uri": "pvc://c/m", "path": "/tmp"}]}}}`, func(b []byte) error { _, err := ParseExecutorOutput(b); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), "unknown field") {
				t.Errorf("error = %v, want unknown field", err)
			}
		})
	}
}

func TestWriteOutputNeedsOutputFile(t *testing.T) {
	e, err := ParseExecutorInput([]byte(`{"inputs": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteOutput(); err == nil || !strings.Contains(err.Error(), "outputFile") {
		t.Errorf("WriteOutput without outputFile: %v", err)
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLocalPathForURI: object store URIs map to the launcher's mount folders, file:// URIs to
// their path; anything else has no local path.
func TestLocalPathForURI(t *testing.T) {
	for uri, want := range map[string]string{
		"minio://mlpipeline/v2/artifacts/p/r/t/x": "/minio/mlpipeline/v2/artifacts/p/r/t/x",
		"s3://b/k":                    "/s3/b/k",
		"gs://b/k":                    "/gcs/b/k",
		"file:///tmp/run/t/metrics":   "/tmp/run/t/metrics",
		"file://relative/not/allowed": "",
		"pvc://claim/models/m/v1":     "",
	} {
		got, err := LocalPathForURI(uri)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("LocalPathForURI(%q) = %q, %v; want %q", uri, got, err, want)
		}
	}
}

// TestIntInRange: an integer converts once, with its range checked before any conversion, so a
// value its Go type cannot hold is an error naming the parameter, its value and the range.
func TestIntInRange(t *testing.T) {
	e, err := ParseExecutorInput([]byte(`{"inputs": {"parameterValues": {"workers": 4294967296, "port": "70000",
		"huge": 1e300, "big_text": "99999999999999999999", "half": 2.5, "ok": 3, "neg": -1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		lo, hi int64
		want   string
	}{
		{"workers", 0, math.MaxInt32, `input parameter "workers": want an integer from 0 to 2147483647, got 4294967296`},
		{"port", 1, 65535, `input parameter "port": want an integer from 1 to 65535, got "70000"`},
		{"huge", math.MinInt64, math.MaxInt64, `input parameter "huge": want an integer from -9007199254740992 to 9007199254740992, got 1e+300`},
		{"big_text", math.MinInt64, math.MaxInt64, `input parameter "big_text": want an integer from -9007199254740992 to 9007199254740992, got "99999999999999999999"`},
		{"half", 0, 10, `input parameter "half": want an integer, got 2.5`},
		{"neg", 0, 10, `input parameter "neg": want an integer from 0 to 10, got -1`},
	} {
		if _, err := e.IntIn(tc.name, 0, tc.lo, tc.hi); err == nil || err.Error() != tc.want {
			t.Errorf("IntIn(%s) error = %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if n, err := e.IntIn("ok", 0, 0, 10); err != nil || n != 3 {
		t.Errorf("IntIn(ok) = %d, %v", n, err)
	}
	if n, err := e.IntIn("absent", 7, 0, 10); err != nil || n != 7 {
		t.Errorf("IntIn(absent) = %d, %v; want the default", n, err)
	}
}
