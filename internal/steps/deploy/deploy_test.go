package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
)

// executor is the ExecutorInput KFP's driver builds from params, with the component's output
// parameters declared in a fresh folder.
func executor(t *testing.T, params map[string]any) (*kfp.Executor, string) {
	t.Helper()
	dir := t.TempDir()
	outParams := map[string]any{}
	for _, o := range OutputNames {
		outParams[o] = map[string]any{"outputFile": filepath.Join(dir, o)}
	}
	b, err := json.Marshal(map[string]any{
		"inputs":  map[string]any{"parameterValues": params},
		"outputs": map[string]any{"parameters": outParams, "outputFile": filepath.Join(dir, "executor_output.json")},
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kfp.ParseExecutorInput(b)
	if err != nil {
		t.Fatal(err)
	}
	return e, dir
}

// withDefaults is what KFP passes: the component's defaults, overridden by params.
func withDefaults(params map[string]any) map[string]any {
	p := Component("img").DefaultParameters()
	for k, v := range params {
		p[k] = v
	}
	return p
}

func TestServiceFromExecutorDefaults(t *testing.T) {
	e, _ := executor(t, withDefaults(map[string]any{"name": "iris", "model_uri": "pvc://gangboost-models/models/iris/v1"}))
	s, err := ServiceFromExecutor(e, "kubeflow-user")
	if err != nil {
		t.Fatal(err)
	}
	want := Service{
		Name: "iris", Namespace: "kubeflow-user", ModelURI: "pvc://gangboost-models/models/iris/v1",
		Claim: "gangboost-models", ModelPath: "models/iris/v1", MountPath: "/mnt/pvc",
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "1", Memory: "1Gi",
		MinReplicas: 1, MaxReplicas: 1, Timeout: 300 * time.Second,
		DeploymentMode: "RawDeployment", FSGroup: ptr(int64(65532)), Promotion: PromotionChallenge,
	}
	if !reflect.DeepEqual(*s, want) {
		t.Errorf("service = %+v\nwant      %+v", *s, want)
	}
	if dir, err := s.LocalModelDir(); err != nil || dir != "/mnt/pvc/models/iris/v1" {
		t.Errorf("local model folder = %s, %v", dir, err)
	}

	e, _ = executor(t, withDefaults(map[string]any{"name": "iris", "model_uri": "pvc://gangboost-models/models/iris/v1",
		"deployment_mode": "", "fs_group": -1, "run_as_user": 1000, "run_as_group": 2000,
		"runtime_args": " --enable_batching=true\t--max_batch_size 128 "}))
	s, err = ServiceFromExecutor(e, "kubeflow-user")
	if err != nil {
		t.Fatal(err)
	}
	if s.DeploymentMode != "" || s.FSGroup != nil || s.RunAsUser == nil || *s.RunAsUser != 1000 || s.RunAsGroup == nil || *s.RunAsGroup != 2000 {
		t.Errorf("mode %q, fsGroup %v, runAsUser %v, runAsGroup %v: want the cluster's mode, no fsGroup, 1000, 2000", s.DeploymentMode, s.FSGroup, s.RunAsUser, s.RunAsGroup)
	}
	if want := []string{"--enable_batching=true", "--max_batch_size", "128"}; !reflect.DeepEqual(s.RuntimeArgs, want) {
		t.Errorf("runtime args %q, want %q", s.RuntimeArgs, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestServiceFromExecutorRejects(t *testing.T) {
	base := map[string]any{"name": "iris", "model_uri": "pvc://gangboost-models/models/iris/v1"}
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"name missing", map[string]any{"name": ""}, "name is empty"},
		{"name upper case", map[string]any{"name": "Iris"}, `name "Iris": want a DNS-1035 label`},
		{"name leading digit", map[string]any{"name": "1iris"}, "DNS-1035"},
		{"name trailing dash", map[string]any{"name": "iris-"}, "DNS-1035"},
		{"name too long", map[string]any{"name": strings.Repeat("a", 54)}, "at most 53 characters"},
		{"model_uri gs", map[string]any{"model_uri": "gs://bucket/iris"}, `model_uri "gs://bucket/iris": want pvc://<claim>/<path>`},
		{"model_uri s3 bucket only", map[string]any{"model_uri": "s3://bucket"}, `names a whole bucket`},
		{"model_uri minio", map[string]any{"model_uri": "minio://bucket/iris/v1/"}, `want pvc://<claim>/<path>`},
		{"model_uri registry without version", map[string]any{"model_uri": "model-registry://iris"}, `want model-registry://<model>/<version>`},
		{"model_uri registry dots", map[string]any{"model_uri": "model-registry://../v1"}, `want model-registry://<model>/<version>`},
		{"model_uri no path", map[string]any{"model_uri": "pvc://gangboost-models"}, "with both a claim and a path"},
		{"model_uri escapes", map[string]any{"model_uri": "pvc://gangboost-models/models/../../etc"}, "must be clean and relative"},
		{"model_uri version ..", map[string]any{"model_uri": "pvc://gangboost-models/models/iris/.."}, "must be clean and relative"},
		{"model_uri bidi", map[string]any{"model_uri": "pvc://gangboost-models/models/iris/v1\u202e"}, `path element "v1\u202e"`},
		{"claim with a newline", map[string]any{"pvc_name": "gangboost-models\nx", "model_uri": "pvc://gangboost-models\nx/models/iris/v1"}, "pvc_name"},
		{"claim with bidi characters", map[string]any{"pvc_name": "c\u202em", "model_uri": "pvc://c\u202em/models/iris/v1"}, "pvc_name"},
		{"model_uri trailing slash", map[string]any{"model_uri": "pvc://gangboost-models/models/iris/v1/"}, "must be clean"},
		{"model_uri double slash", map[string]any{"model_uri": "pvc://gangboost-models//models/iris/v1"}, "must be clean"},
		{"model_uri other claim", map[string]any{"model_uri": "pvc://other/models/iris/v1"}, `is on claim "other" but pvc_name is "gangboost-models"`},
		{"cpu", map[string]any{"cpu": "one"}, `cpu = "one": not a Kubernetes quantity`},
		{"memory", map[string]any{"memory": "1 GB"}, `memory = "1 GB": not a Kubernetes quantity`},
		{"memory zero", map[string]any{"memory": "0"}, `memory = "0": want more than 0`},
		{"min replicas", map[string]any{"min_replicas": 0}, "min_replicas = 0, want at least 1"},
		{"max below min", map[string]any{"min_replicas": 3, "max_replicas": 2}, "max_replicas = 2, want at least min_replicas (3)"},
		{"replicas not whole", map[string]any{"max_replicas": 1.5}, `"max_replicas": want an integer`},
		{"protocol", map[string]any{"protocol_version": "v3"}, `protocol_version = "v3"`},
		{"timeout", map[string]any{"timeout_seconds": 0}, "timeout_seconds = 0, want more than 0"},
		{"deployment mode", map[string]any{"deployment_mode": "Raw"}, `deployment_mode = "Raw", want RawDeployment, Serverless, Standard, Knative, or empty`},
		{"fs_group below -1", map[string]any{"fs_group": -2}, `"fs_group": want an integer from -1 to 4294967295`},
		{"unknown input", map[string]any{"replicas": 2}, `unknown input parameter "replicas"`},
		{"runtime_args misspelt flag", map[string]any{"runtime_args": "--enable_batchng"}, "runtime_args: runtime arguments: flag provided but not defined: -enable_batchng"},
		{"runtime_args bad value", map[string]any{"runtime_args": "--max_batch_delay=soon"}, `runtime_args: runtime arguments: invalid value "soon" for flag -max_batch_delay`},
		{"runtime_args the runtime's own", map[string]any{"runtime_args": "--model_dir=/etc"}, "runtime_args: runtime argument --model_dir: the ServingRuntime sets it"},
		{"runtime_args not a flag", map[string]any{"runtime_args": "--enable_batching true"}, `runtime_args: runtime argument "true": not a flag`},
		{"runtime_args too long", map[string]any{"runtime_args": strings.Repeat("--enable_batching ", 1000)}, "runtime_args: 18000 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{}
			for k, v := range base {
				p[k] = v
			}
			for k, v := range tc.params {
				p[k] = v
			}
			e, _ := executor(t, withDefaults(p))
			_, err := ServiceFromExecutor(e, "ns")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// The gangboost runtimes are opt-in: the InferenceService must always name one.
	t.Run("runtime empty", func(t *testing.T) {
		e, _ := executor(t, withDefaults(map[string]any{"name": "iris", "model_uri": base["model_uri"], "runtime": ""}))
		s, err := ServiceFromExecutor(e, "ns")
		if err != nil {
			t.Fatal(err)
		}
		if s.Runtime != "gangboost-xgboost" {
			t.Fatalf("an empty runtime input gives runtime %q, want the default gangboost-xgboost", s.Runtime)
		}
		s.Runtime = ""
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "runtime is empty") || !strings.Contains(err.Error(), "not auto-selected") {
			t.Fatalf("Validate with no runtime = %v, want it to say the runtime must be named", err)
		}
	})
	t.Run("no namespace", func(t *testing.T) {
		e, _ := executor(t, withDefaults(base))
		if _, err := ServiceFromExecutor(e, ""); err == nil || !strings.Contains(err.Error(), "namespace") {
			t.Fatalf("error = %v, want one about the namespace", err)
		}
	})
}

func TestWriteOutputs(t *testing.T) {
	e, dir := executor(t, withDefaults(map[string]any{"name": "iris", "model_uri": "pvc://gangboost-models/models/iris/v1"}))
	ep := &Endpoint{URL: "http://iris-predictor.ns.svc.cluster.local", ExternalURL: "http://iris-ns.example.com", ModelName: "iris"}
	if err := WriteOutputs(e, &Result{Endpoint: *ep}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "executor_output.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := kfp.ParseExecutorOutput(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range out.GetParameterValues() {
		got[k] = v.GetStringValue()
	}
	want := map[string]string{"url": ep.URL, "external_url": ep.ExternalURL, "grpc_address": "", "model_name": "iris",
		"champion_url": "", "champion_model_uri": "", "challenger": ""}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("output %s = %q (set %v), want %q", k, g, ok, v)
		}
		if f, err := os.ReadFile(filepath.Join(dir, k)); err != nil || string(f) != v {
			t.Errorf("output file %s = %q, %v; want %q", k, f, err, v)
		}
	}
}

// stuck is a backend whose service never becomes ready: it reports progress and waits for ctx.
type stuck struct{ applied int }

func (b *stuck) Apply(context.Context, *Service) error { b.applied++; return nil }
func (b *stuck) Wait(ctx context.Context, s *Service, progress func(string)) (*Endpoint, error) {
	progress("pods ready 0/1")
	<-ctx.Done()
	return nil, ctx.Err()
}
func (b *stuck) Describe(ctx context.Context, s *Service) string {
	if ctx.Err() != nil {
		return "described with an ended context"
	}
	return "condition PredictorReady=False\npod iris-predictor-0: Ready=False"
}

// A service not ready by its deadline fails naming the deadline and with the backend's account
// of why; the description is made even though the wait's context has ended.
func TestDeployerDeadline(t *testing.T) {
	s := &Service{Name: "iris", Namespace: "ns", ModelURI: "pvc://c/m/v1", Claim: "c", ModelPath: "m/v1",
		Runtime: "gangboost-xgboost", ProtocolVersion: "v2", CPU: "1", Memory: "1Gi", MinReplicas: 1, MaxReplicas: 1,
		Timeout: 300 * time.Millisecond}
	var log strings.Builder
	b := &stuck{}
	// The hang guard ends a wait that ignores the deadline; it would show as a context error
	// rather than the deadline's own message checked below.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := (&Deployer{Backend: b, Log: &log}).Run(ctx, s)
	el := time.Since(start)
	var nr *NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("error = %v, want a NotReadyError", err)
	}
	// A deadline cannot fire early; how late it fires depends on the machine, so it is only logged.
	if el < s.Timeout {
		t.Errorf("gave up after %s, before the %s deadline", el, s.Timeout)
	}
	t.Logf("gave up after %s with a %s deadline", el.Round(time.Millisecond), s.Timeout)
	for _, want := range []string{"iris is not ready: deadline of 300ms (timeout_seconds) passed", "condition PredictorReady=False", "pod iris-predictor-0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if b.applied != 1 || !strings.Contains(log.String(), "pods ready 0/1") {
		t.Errorf("applied %d times; log:\n%s", b.applied, log.String())
	}
}
