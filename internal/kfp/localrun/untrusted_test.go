package localrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
)

// These tests run packages and parameters written by someone who wants the runner to do more than
// run the package's steps on its work folder.

// TestParameterValuesAreData: a value that spells a placeholder reaches the step as written (not
// as the claim's folder), a quote in a value does not break {{$}}, and executor_input.json is the
// very {{$}} the step received.
func TestParameterValuesAreData(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	var out syncBuffer
	message := `a"b {{$.inputs.parameters['pvc_mount_path']}}`
	res, err := Run(context.Background(), Options{
		Package: tinyPackage(t), WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second,
		Params: map[string]string{"message": message, "behave": "{{$.inputs.parameters['message']}}"},
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(work, "pvc", "tiny-claim", "shared", "message.txt")); err != nil || string(b) != message {
		t.Errorf("the step wrote message %q (%v), want %q as given", b, err, message)
	}
	for _, tr := range res.Tasks {
		recorded, err := os.ReadFile(filepath.Join(tr.Root, "executor_input.json"))
		if err != nil {
			t.Fatal(err)
		}
		received, err := os.ReadFile(filepath.Join(tr.Root, "received-executor-input"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(recorded, received) {
			t.Errorf("task %s: executor_input.json\n%s\nthe step received\n%s", tr.Name, recorded, received)
		}
		in := &pipelinespec.ExecutorInput{}
		if err := protojson.Unmarshal(recorded, in); err != nil {
			t.Fatalf("task %s: %v", tr.Name, err)
		}
		if got := in.GetInputs().GetParameterValues()["behave"].GetStringValue(); got != "{{$.inputs.parameters['message']}}" {
			t.Errorf("task %s: behave = %q, want the placeholder's text as given", tr.Name, got)
		}
	}
}
