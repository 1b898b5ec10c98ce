package protocoltest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

// Prometheus scrapers that predate escaping schemes read the classic content type; OpenMetrics
// is served when asked for.
func TestMetricsContentType(t *testing.T) {
	s := startIris(t)
	for _, c := range []struct{ accept, want string }{
		{"", "text/plain; version=0.0.4; charset=utf-8"},
		{"text/plain", "text/plain; version=0.0.4; charset=utf-8"},
		{"application/openmetrics-text;version=1.0.0", "application/openmetrics-text"},
	} {
		req, _ := http.NewRequest("GET", s.URL+"/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != 200 || !strings.HasPrefix(ct, c.want) || (c.want == "text/plain; version=0.0.4; charset=utf-8" && ct != c.want) {
			t.Errorf("Accept %q: %d %q, want %q", c.accept, resp.StatusCode, ct, c.want)
		}
	}
}

// gRPC takes a DataFrame as KServe's client sends it too: one input per column, matched by name.
func TestGRPCPandasColumns(t *testing.T) {
	s := startIris(t)
	c := grpcClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	rows := []*inference.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{2, 4},
		Contents: &inference.InferTensorContents{Fp32Contents: []float32{5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3}}}}
	want, err := c.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Inputs: rows})
	if err != nil {
		t.Fatal(err)
	}
	column := func(name, dt string, contents *inference.InferTensorContents) *inference.ModelInferRequest_InferInputTensor {
		return &inference.ModelInferRequest_InferInputTensor{Name: name, Datatype: dt, Shape: []int64{2}, Contents: contents}
	}
	got, err := c.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris",
		Parameters: map[string]*inference.InferParameter{"content_type": {ParameterChoice: &inference.InferParameter_StringParam{StringParam: "pd"}}},
		Inputs: []*inference.ModelInferRequest_InferInputTensor{
			column("petal_width", "FP32", &inference.InferTensorContents{Fp32Contents: []float32{0.2, 2.3}}),
			column("sepal_length", "FP64", &inference.InferTensorContents{Fp64Contents: []float64{5.1, 6.7}}),
			column("petal_length", "FP32", &inference.InferTensorContents{Fp32Contents: []float32{1.4, 5.2}}),
			column("sepal_width", "INT32", &inference.InferTensorContents{IntContents: []int32{3, 3}}),
		}})
	if err != nil {
		t.Fatal(err)
	}
	// sepal_width 3.5 became 3 as an INT32 column; compare with rows that say the same.
	rows[0].Contents.Fp32Contents[1] = 3
	want, err = c.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Inputs: rows})
	if err != nil {
		t.Fatal(err)
	}
	g, w := got.Outputs[0].Contents.Fp32Contents, want.Outputs[0].Contents.Fp32Contents
	if len(g) != 6 || len(w) != 6 {
		t.Fatalf("got %v, want %v", g, w)
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("columns: %v; rows: %v", g, w)
		}
	}
}

// copyFile copies src to dir/name.
func copyFile(t *testing.T, src, dir, name string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Model folders as xgbserver takes them: the one model file, whatever its name, read by
// content, the legacy binary format (.bst) included; two model files or only a pickle keep the
// server not ready with a message naming them.
func TestModelFoldersAsXGBServerTakesThem(t *testing.T) {
	seeds := filepath.Join(root, "runtime", "forest", "testdata")
	body := []byte(`{"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[1,2,3,0.5,-1,7]}],"outputs":[{"name":"output-0"},{"name":"contribs"}]}`)
	jsonDir := t.TempDir()
	copyFile(t, filepath.Join(seeds, "seed_binary.json"), jsonDir, "model.json")
	ref := start(t, "--model_name", "m", "--model_dir", jsonDir)
	status, _, want := call(t, "POST", ref.URL+"/v2/models/m/infer", body)
	if status != 200 {
		t.Fatalf("reference model: %d %s", status, want)
	}
	for _, name := range []string{"model.bst", "booster-v3.model", "xgb.bin", "anything.json"} {
		dir := t.TempDir()
		src := "seed_binary.bst"
		if strings.HasSuffix(name, ".json") {
			src = "seed_binary.ubj" // UBJSON under a .json name: read by content
		}
		copyFile(t, filepath.Join(seeds, src), dir, name)
		s := start(t, "--model_name", "m", "--model_dir", dir)
		status, _, got := call(t, "POST", s.URL+"/v2/models/m/infer", body)
		if status != 200 || string(dropID(got)) != string(dropID(want)) {
			t.Errorf("%s: %d %s\nwant %s", name, status, got, want)
		}
	}
	for _, c := range []struct {
		files []string
		want  []string
	}{
		{[]string{"model.json", "model.bst"}, []string{"2 model files", "model.bst", "model.json"}},
		{[]string{"model.pkl"}, []string{"model.pkl is a Python pickle", `save_model(\"model.json\")`}},
		{[]string{"notes.txt"}, []string{"no model file", "notes.txt"}},
	} {
		dir := t.TempDir()
		for _, f := range c.files {
			copyFile(t, filepath.Join(seeds, "seed_binary.bst"), dir, f)
		}
		s := start(t, "--model_name", "m", "--model_dir", dir)
		status, _, got := call(t, "GET", s.URL+"/v2/health/ready", nil)
		if status != 503 || !contains(string(got), c.want...) {
			t.Errorf("%v: ready %d %s; want 503 naming %q", c.files, status, got, c.want)
		}
	}
}
