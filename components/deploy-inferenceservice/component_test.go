package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/deploy/local"
	"github.com/gangboost/gangboost/test/testbin"
)

var update = flag.Bool("update", false, "rewrite component.yaml from deploy.Component")

// TestMain removes the component binary the tests build.
func TestMain(m *testing.M) { testbin.Main(m) }

const generator = "internal/steps/deploy.Component: go test ./components/deploy-inferenceservice -update"

// TestComponentYAML: component.yaml is the IR generated from deploy.Component (go test -update
// rewrites it), parses strictly, and keeps KFP's placeholder rules.
func TestComponentYAML(t *testing.T) {
	kfptest.CheckComponentYAML(t, deploy.Component(image), "component.yaml", generator, *update)
}

// TestDefaultsMakeAService: the ExecutorInput KFP builds from component.yaml's defaults and the
// required inputs is a valid service.
func TestDefaultsMakeAService(t *testing.T) {
	params := deploy.Component(image).DefaultParameters()
	params["name"], params["model_uri"] = "iris", "pvc://gangboost-models/models/iris/v1"
	s, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.Marshal(&pipelinespec.ExecutorInput{Inputs: &pipelinespec.ExecutorInput_Inputs{ParameterValues: s.GetFields()}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kfp.ParseExecutorInput(b)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := deploy.ServiceFromExecutor(e, "kubeflow-user")
	if err != nil {
		t.Fatal(err)
	}
	if svc.Namespace != "kubeflow-user" || svc.Runtime != "gangboost-xgboost" || svc.ProtocolVersion != "v2" || svc.Timeout != 300*time.Second {
		t.Errorf("service from defaults = %+v", svc)
	}
}

// TestREADME: the README documents every input and output of the component.
func TestREADME(t *testing.T) {
	kfptest.CheckREADME(t, deploy.Component(image), "README.md")
}

// TestLocalBackend runs the component as the local pipeline runner does (GANGBOOST_BACKEND=local,
// the claim a local folder at pvc_mount_path): it serves the model with gangboost-runtime,
// records the process, and its ExecutorOutput names the URL that serves the model.
func TestLocalBackend(t *testing.T) {
	bins := testbin.Dir(t)
	for _, b := range []string{"gangboost-train", "gangboost-runtime"} {
		if _, err := os.Stat(filepath.Join(bins, b)); err != nil {
			t.Fatalf("%s not in %s (run `make build`, or set GANGBOOST_BIN_DIR): %v", b, bins, err)
		}
	}
	self := testbin.Built(t, "./components/deploy-inferenceservice")
	claim, state, outDir := t.TempDir(), t.TempDir(), t.TempDir()
	model := filepath.Join(claim, "models", "iris", "v1")
	if out, err := exec.Command(filepath.Join(bins, "gangboost-train"), "--dataset", "iris", "--objective", "multi:softprob",
		"--num-round", "5", "--nthread", "1", "--model-dir", model).CombinedOutput(); err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	params := deploy.Component(image).DefaultParameters()
	params["name"], params["model_uri"], params["pvc_mount_path"] = "iris", "pvc://gangboost-models/models/iris/v1", claim
	// The runtime's auto choice leaves the Iris model unbatched; the service's own argument,
	// after the runtime's, turns batching on.
	params["runtime_args"] = "--enable_batching=true"
	outParams := map[string]any{}
	for _, o := range deploy.OutputNames {
		outParams[o] = map[string]any{"outputFile": filepath.Join(outDir, o)}
	}
	in, err := json.Marshal(map[string]any{
		"inputs":  map[string]any{"parameterValues": params},
		"outputs": map[string]any{"parameters": outParams, "outputFile": filepath.Join(outDir, "executor_output.json")},
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--executor-input", string(in))
	cmd.Env = append(os.Environ(), "GANGBOOST_BACKEND=local", "GANGBOOST_BIN_DIR="+bins, "GANGBOOST_LOCAL_STATE="+state)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if r, err := local.ReadRecord(state, "iris"); err == nil {
			_ = procgroup.Signal(r.PGID, syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatalf("component: %v\n%s", err, out)
	}
	t.Logf("component exited 0 after %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	b, err := os.ReadFile(filepath.Join(outDir, "executor_output.json"))
	if err != nil {
		t.Fatal(err)
	}
	eo, err := kfp.ParseExecutorOutput(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range eo.GetParameterValues() {
		got[k] = v.GetStringValue()
	}
	rec, err := local.ReadRecord(state, "iris")
	if err != nil {
		t.Fatal(err)
	}
	if got["url"] != rec.URL || got["external_url"] != rec.URL || got["grpc_address"] != rec.GRPC || got["model_name"] != "iris" ||
		!strings.HasPrefix(got["url"], "http://127.0.0.1:") {
		t.Fatalf("outputs %v, record %+v", got, rec)
	}
	// The runtime outlives the step and serves the model.
	resp, err := http.Get(got["url"] + "/v2/models/iris/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/v2/models/iris/ready: %s", got["url"], resp.Status)
	}
	var md struct {
		Parameters map[string]string `json:"parameters"`
	}
	resp, err = http.Get(got["url"] + "/v2/models/iris")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if err != nil || md.Parameters["batching"] != "true" {
		t.Errorf("model metadata parameters %v (%v): want batching true, as runtime_args asked", md.Parameters, err)
	}
	if pgid, err := syscall.Getpgid(rec.PID); err != nil || pgid != rec.PGID {
		t.Errorf("runtime pid %d: process group %d (%v), want %d", rec.PID, pgid, err, rec.PGID)
	}

	// A model folder that does not exist fails the step, naming it, and writes no output.
	params["model_uri"] = "pvc://gangboost-models/models/iris/v9"
	in, _ = json.Marshal(map[string]any{
		"inputs":  map[string]any{"parameterValues": params},
		"outputs": map[string]any{"parameters": outParams, "outputFile": filepath.Join(outDir, "failed.json")},
	})
	cmd = exec.Command(self, "--executor-input", string(in))
	cmd.Env = append(os.Environ(), "GANGBOOST_BACKEND=local", "GANGBOOST_BIN_DIR="+bins, "GANGBOOST_LOCAL_STATE="+state)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("component with a missing model: %v, want exit 1\n%s", err, out)
	}
	if want := fmt.Sprintf("model folder %s does not exist", filepath.Join(claim, "models", "iris", "v9")); !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if _, err := os.Stat(filepath.Join(outDir, "failed.json")); err == nil {
		t.Error("a failed step wrote an ExecutorOutput")
	}
}
