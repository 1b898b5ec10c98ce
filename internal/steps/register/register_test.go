package register_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/register"
	"github.com/gangboost/gangboost/test/modelregistry"
	"github.com/gangboost/gangboost/test/s3server"
)

func prop(t *testing.T, obj map[string]any, name string) any {
	t.Helper()
	props, _ := obj["customProperties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	if p == nil {
		t.Fatalf("no custom property %s in %v", name, props)
	}
	if v, ok := p["double_value"]; ok {
		return v
	}
	return p["string_value"]
}

func trainerMetadata() *modeldir.Metadata {
	return &modeldir.Metadata{ModelFile: "model.json", ModelSHA256: strings.Repeat("ab", 32), Objective: "multi:softprob",
		Rounds: 10, XGBoostVersion: "1.7.4", Producer: "train-0123456789",
		Metrics: map[string][]float64{"eval-mlogloss": {0.9, 0.31}, "eval-merror": {0.2, 0.05}}}
}

func TestRegisterAndRecordServing(t *testing.T) {
	reg := modelregistry.Start(t)
	c, err := register.New(reg.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := register.Model{Name: "iris", Version: "run-1a2b3c4d", URI: "s3://models/team-a/iris/run-1a2b3c4d/", Trainer: trainerMetadata(),
		RunID: "1a2b3c4d-run", Evaluated: map[string]float64{"accuracy": 0.9667, "logloss": 0.1234}}
	rec, err := c.RegisterVersion(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Created || rec.ModelArtifactID == "" {
		t.Fatalf("record %+v: want a created version with an artifact", rec)
	}
	// Read back through the registry's REST API.
	rm := reg.Get(t, "/registered_model", url.Values{"name": {"iris"}})
	mv := reg.Get(t, "/model_version", url.Values{"name": {"run-1a2b3c4d"}, "parentResourceId": {rm["id"].(string)}})
	for name, want := range map[string]any{"trainer.eval-mlogloss": 0.31, "trainer.eval-merror": 0.05, "evaluate.accuracy": 0.9667,
		"evaluate.logloss": 0.1234, register.PropRunID: "1a2b3c4d-run", register.PropSHA256: strings.Repeat("ab", 32), "trainer.rounds": 10.0} {
		if got := prop(t, mv, name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("version property %s = %v, want %v", name, got, want)
		}
	}
	arts := reg.Get(t, "/model_versions/"+mv["id"].(string)+"/artifacts", nil)
	items, _ := arts["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("artifacts %v, want one", arts)
	}
	a := items[0].(map[string]any)
	if a["uri"] != m.URI || a["modelFormatName"] != "xgboost" || a["modelFormatVersion"] != "1.7.4" || prop(t, a, register.PropSHA256) != strings.Repeat("ab", 32) {
		t.Errorf("artifact %v: want uri %s, format xgboost 1.7.4 and the sha256", a, m.URI)
	}

	// A retried step updates; the same version with another model is refused.
	if again, err := c.RegisterVersion(ctx, m); err != nil || again.Created || again.ModelVersionID != rec.ModelVersionID {
		t.Errorf("registering again: %+v, %v; want the same version, updated", again, err)
	}
	other := m
	other.URI = "s3://models/team-a/iris/elsewhere/"
	if _, err := c.RegisterVersion(ctx, other); err == nil || !strings.Contains(err.Error(), "registered with the model at "+m.URI) {
		t.Errorf("the same version with another model: %v", err)
	}

	// Serving: the registry names the version that serves where.
	isID, err := c.RecordServing(ctx, rec, register.Serving{Name: "iris", Namespace: "team-a", Runtime: "gangboost-xgboost"})
	if err != nil {
		t.Fatal(err)
	}
	env := reg.Get(t, "/serving_environment", url.Values{"name": {"team-a"}})
	is := reg.Get(t, "/inference_service", url.Values{"name": {"iris"}, "parentResourceId": {env["id"].(string)}})
	if is["id"] != isID || is["modelVersionId"] != rec.ModelVersionID || is["desiredState"] != "DEPLOYED" {
		t.Errorf("inference service %v: want version %s deployed", is, rec.ModelVersionID)
	}
	serves := reg.Get(t, "/inference_services/"+isID+"/serves", nil)
	if items, _ := serves["items"].([]any); len(items) != 1 || items[0].(map[string]any)["modelVersionId"] != rec.ModelVersionID {
		t.Errorf("serve records %v: want one of version %s", serves, rec.ModelVersionID)
	}
	// A promotion points the same InferenceService at the new version.
	next := m
	next.Version, next.URI = "run-5e6f7a8b", "s3://models/team-a/iris/run-5e6f7a8b/"
	rec2, err := c.RegisterVersion(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.RecordServing(ctx, rec2, register.Serving{Name: "iris", Namespace: "team-a", Runtime: "gangboost-xgboost"}); err != nil || id != isID {
		t.Fatalf("recording the promotion: %s, %v; want the same InferenceService %s", id, err, isID)
	}
	if is := reg.Get(t, "/inference_services/"+isID, nil); is["modelVersionId"] != rec2.ModelVersionID {
		t.Errorf("after the promotion the registry says %v serves, want %s", is["modelVersionId"], rec2.ModelVersionID)
	}
}

func TestRegistryThatDoesNotAnswer(t *testing.T) {
	// A port outside the ephemeral range, which no outgoing connection takes meanwhile.
	port, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c, err := register.New("http://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RegisterVersion(context.Background(), register.Model{Name: "iris", Version: "v1", URI: "pvc://c/models/iris/v1"})
	if err == nil || !strings.Contains(err.Error(), "model registry http://"+addr) || !strings.Contains(err.Error(), "does it answer from here") {
		t.Errorf("a registry that does not answer: %v", err)
	}
	for _, bad := range []string{"model-registry-service:8080", "ftp://x", ""} {
		if _, err := register.New(bad, ""); err == nil || !strings.Contains(err.Error(), "registry_url") {
			t.Errorf("register.New(%q): %v", bad, err)
		}
	}
}

// The registry's KServe storage initializer resolves model-registry://<model>/<version> to the
// registered artifact and downloads it from the object store; a model or version it cannot
// resolve fails, naming it.
func TestRegistryStorageInitializer(t *testing.T) {
	reg := modelregistry.Start(t)
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	model := []byte(`{"learner":{"attributes":{}}}`)
	f, err := modelobjects.Open("s3://models/team-a/iris/v1/", objectstore.Config{Endpoint: srv.Endpoint, PathStyle: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	md := &modeldir.Metadata{Objective: "multi:softprob", Producer: "train-1"}
	if err := f.Publish(ctx, "model.json", model, md, false); err != nil {
		t.Fatal(err)
	}
	c, _ := register.New(reg.URL, "")
	if _, err := c.RegisterVersion(ctx, register.Model{Name: "iris", Version: "v1", URI: "s3://models/team-a/iris/v1/", Trainer: md}); err != nil {
		t.Fatal(err)
	}
	// A version registered without an artifact (another client's half-done registration).
	rm := reg.Get(t, "/registered_model", url.Values{"name": {"iris"}})
	body := fmt.Sprintf(`{"name":"bare","registeredModelId":%q}`, rm["id"])
	resp, err := http.Post(reg.URL+modelregistry.APIPath+"/model_versions", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create a bare version: %v %v", resp.Status, err)
	}
	resp.Body.Close()

	csi := func(uri string) (string, []byte, error) {
		dest := filepath.Join(t.TempDir(), "mnt", "models")
		if err := os.MkdirAll(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(reg.CSI, uri, dest)
		cmd.Env = append(os.Environ(), "MODEL_REGISTRY_BASE_URL="+reg.Host, "MODEL_REGISTRY_SCHEME=http",
			"AWS_ENDPOINT_URL="+srv.Endpoint, "S3_USER_VIRTUAL_BUCKET=false", "AWS_DEFAULT_REGION=us-east-1")
		out, err := cmd.CombinedOutput()
		return dest, out, err
	}
	dest, out, err := csi("model-registry://iris/v1")
	if err != nil {
		t.Fatalf("model-registry://iris/v1: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "model.json")); err != nil || !bytes.Equal(got, model) {
		t.Fatalf("the registry's initializer downloaded %q (%v), want the published model\n%s", got, err, out)
	}
	for uri, want := range map[string]string{"model-registry://nosuch/v1": "nosuch", "model-registry://iris/bare": "bare", "model-registry://iris/v9": "v9"} {
		if _, out, err := csi(uri); err == nil || !strings.Contains(string(out), want) {
			t.Errorf("%s: %v, want a failure naming %q:\n%s", uri, err, want, out)
		}
	}
}
