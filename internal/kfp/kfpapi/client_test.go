package kfpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp/kfpapi"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi/kfpfake"
)

func committed(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../pipelines/xgboost-volcano.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUploadVersionRun: upload, a second upload of the name conflicts, a version goes under the
// pipeline, the newest version's spec types the parameters, and a run starts.
func TestUploadVersionRun(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	srv.Token = "t0ken"
	c := &kfpapi.Client{Host: srv.URL, Token: "t0ken"}
	pkg := committed(t)

	if p, err := c.FindPipeline(ctx, "xgboost-volcano", ""); err != nil || p != nil {
		t.Fatalf("FindPipeline before upload = %v, %v", p, err)
	}
	p, err := c.UploadPipeline(ctx, "xgboost-volcano.yaml", pkg, kfpapi.UploadOptions{Name: "xgboost-volcano", Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if p.PipelineID == "" || p.Name != "xgboost-volcano" {
		t.Fatalf("uploaded %+v", p)
	}
	if got := srv.Pipelines()[0].Versions[0]; string(got.Package) != string(pkg) || got.FileName != "xgboost-volcano.yaml" {
		t.Errorf("the server got file %s with %d bytes, want the package's %d", got.FileName, len(got.Package), len(pkg))
	}
	if !srv.Pipelines()[0].Versions[0].HasPlatform {
		t.Error("the server dropped the platform document")
	}
	if _, err := c.UploadPipeline(ctx, "xgboost-volcano.yaml", pkg, kfpapi.UploadOptions{Name: "xgboost-volcano"}); !kfpapi.IsConflict(err) {
		t.Fatalf("second upload: %v, want a conflict", err)
	}
	found, err := c.FindPipeline(ctx, "xgboost-volcano", "")
	if err != nil || found == nil || found.PipelineID != p.PipelineID {
		t.Fatalf("FindPipeline = %+v, %v", found, err)
	}
	v, err := c.UploadPipelineVersion(ctx, p.PipelineID, "xgboost-volcano.yaml", pkg, kfpapi.UploadOptions{Name: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	latest, err := c.LatestVersion(ctx, p.PipelineID)
	if err != nil || latest.PipelineVersionID != v.PipelineVersionID {
		t.Fatalf("LatestVersion = %+v, %v; want %s", latest, err, v.PipelineVersionID)
	}
	if same, err := c.FindVersion(ctx, p.PipelineID, "v2"); err != nil || same == nil || same.PipelineVersionID != v.PipelineVersionID {
		t.Fatalf("FindVersion = %+v, %v", same, err)
	}
	types, err := kfpapi.ParameterTypes(latest.PipelineSpec)
	if err != nil {
		t.Fatal(err)
	}
	if types["workers"] != "NUMBER_INTEGER" || types["max_depth"] != "STRING" || types["tolerance"] != "NUMBER_DOUBLE" {
		t.Errorf("types = %v", types)
	}
	params, err := kfpapi.TypedParameters([]string{"workers=3", "max_depth=6", "tolerance=0.05", "xgb_params={\"gamma\":1}"}, types)
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.CreateRun(ctx, &kfpapi.Run{DisplayName: "r", PipelineVersionReference: &kfpapi.PipelineVersionReference{PipelineID: p.PipelineID, PipelineVersionID: v.PipelineVersionID},
		RuntimeConfig: &kfpapi.RuntimeConfig{Parameters: params}})
	if err != nil {
		t.Fatal(err)
	}
	if run.RunID == "" || run.State != "PENDING" {
		t.Errorf("run = %+v", run)
	}
	sent, _ := json.Marshal(srv.Runs()[0]["runtime_config"])
	if want := `{"parameters":{"max_depth":"6","tolerance":0.05,"workers":3,"xgb_params":{"gamma":1}}}`; string(sent) != want {
		t.Errorf("runtime_config = %s, want %s", sent, want)
	}
	for _, r := range srv.Requests() {
		if r.Auth != "Bearer t0ken" {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
	if got := c.RunURL(run.RunID); got != srv.URL+"/#/runs/details/"+run.RunID {
		t.Errorf("RunURL = %s", got)
	}
}

// TestErrors: both of the server's error bodies become an Error with its message and code.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	srv.Token = "right"
	c := &kfpapi.Client{Host: srv.URL, Token: "wrong"}
	_, err := c.FindPipeline(ctx, "x", "")
	var e *kfpapi.Error
	if !errors.As(err, &e) || e.Status != 401 || e.Code != 16 || !strings.Contains(err.Error(), "no user identity header") || !strings.Contains(err.Error(), "--token") {
		t.Errorf("unauthenticated: %v", err)
	}
	c.Token = "right"
	_, err = c.UploadPipeline(ctx, "p.txt", committed(t), kfpapi.UploadOptions{})
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(err.Error(), "Failed to read a pipeline spec file: unexpected file extension p.txt") {
		t.Errorf("bad file name: %v", err)
	}
	_, err = c.UploadPipeline(ctx, "p.yaml", []byte("pipelineInfo:\n  name: x\n  nope: 1\n"), kfpapi.UploadOptions{})
	if err == nil || !strings.Contains(err.Error(), "Failed to read a pipeline spec file") {
		t.Errorf("unknown field: %v", err)
	}
	_, err = c.CreateRun(ctx, &kfpapi.Run{DisplayName: "r", PipelineVersionReference: &kfpapi.PipelineVersionReference{PipelineID: "p", PipelineVersionID: "v"}, RuntimeConfig: &kfpapi.RuntimeConfig{}})
	if !errors.As(err, &e) || e.Status != 404 || e.Code != 5 || !strings.Contains(err.Error(), "POST /apis/v2beta1/runs: 404 Not Found: PipelineVersion v not found") {
		t.Errorf("missing version: %v", err)
	}

	// A proxy in front of KFP answering with plain text.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer plain.Close()
	_, err = (&kfpapi.Client{Host: plain.URL}).FindPipeline(ctx, "x", "")
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway: upstream connect error") {
		t.Errorf("plain-text error: %v", err)
	}
}

func TestTypedParameters(t *testing.T) {
	types := map[string]string{"workers": "NUMBER_INTEGER", "eta": "STRING", "tolerance": "NUMBER_DOUBLE", "flag": "BOOLEAN", "xgb_params": "STRUCT", "l": "LIST"}
	for _, c := range []struct {
		pairs []string
		want  string
	}{
		{[]string{"workers=2", "eta=0.3", "tolerance=1", "flag=true", "xgb_params={}", "l=[1]"}, `{"eta":"0.3","flag":true,"l":[1],"tolerance":1,"workers":2,"xgb_params":{}}`},
		{[]string{"workers=two"}, `error: parameter workers is NUMBER_INTEGER: "two" is not an integer`},
		{[]string{"workers=2.5"}, `error: parameter workers is NUMBER_INTEGER: "2.5" is not an integer`},
		{[]string{"xgb_params=[1]"}, `error: parameter xgb_params is STRUCT: "[1]" is not a JSON object`},
		{[]string{"nope=1"}, `error: the pipeline has no parameter "nope" (it has: eta, flag, l, tolerance, workers, xgb_params)`},
		{[]string{"workers"}, `error: parameter "workers": want key=value`},
	} {
		got, err := kfpapi.TypedParameters(c.pairs, types)
		s := ""
		if err != nil {
			s = "error: " + err.Error()
		} else {
			b, _ := json.Marshal(got)
			s = string(b)
		}
		if s != c.want {
			t.Errorf("%v: %s, want %s", c.pairs, s, c.want)
		}
	}
	got, _ := kfpapi.TypedParameters([]string{"a=1", "b=0.5", "c=x", "d=false", "e={\"k\":1}"}, nil)
	if b, _ := json.Marshal(got); string(b) != `{"a":1,"b":0.5,"c":"x","d":false,"e":{"k":1}}` {
		t.Errorf("untyped: %s", b)
	}
}
