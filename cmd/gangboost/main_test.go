package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/components"
	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi/kfpfake"
)

const pkgFile = "../../pipelines/xgboost-volcano.yaml"

func gangboost(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func noTokenFile(t *testing.T) {
	saved := kfpapi.TokenFile
	kfpapi.TokenFile = filepath.Join(t.TempDir(), "absent")
	t.Cleanup(func() { kfpapi.TokenFile = saved })
	t.Setenv("KFP_TOKEN", "")
	t.Setenv("KFP_HOST", "")
}

func TestCompile(t *testing.T) {
	want, err := os.ReadFile(pkgFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := gangboost(t, "pipeline", "compile")
	if code != 0 || out != string(want) {
		t.Fatalf("compile to stdout: exit %d, %d bytes (want the committed %d); %s", code, len(out), len(want), errs)
	}
	file := filepath.Join(t.TempDir(), "p.yaml")
	if code, _, errs := gangboost(t, "pipeline", "compile", "-o", file, "--mount-path", "/data"); code != 0 {
		t.Fatalf("compile -o: exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "mountPath: /data") || strings.Contains(string(b), "mountPath: /mnt/pvc") || strings.Contains(string(b), "constant: /mnt/pvc") {
		t.Error("--mount-path /data did not move every mount and pvc_mount_path")
	}
	if code, _, errs := gangboost(t, "pipeline", "compile", "--mount-path", "data"); code != 1 || !strings.Contains(errs, "absolute") {
		t.Errorf("relative mount path: exit %d: %s", code, errs)
	}
}

// compile --registry R writes every image of the package and of the component specs in R, with
// the default registry they are the committed files, and a registry with a scheme or a digest is
// refused before anything is written.
func TestCompileRegistry(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := gangboost(t, "pipeline", "compile", "--registry", "localhost:5000/ml/", "--components-dir", dir)
	if code != 0 {
		t.Fatalf("compile --registry: exit %d: %s", code, errs)
	}
	texts := map[string]string{"package": out}
	for _, name := range components.Names() {
		b, err := os.ReadFile(filepath.Join(dir, name, "component.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	for what, text := range texts {
		if strings.Contains(text, version.DefaultRegistry) || !strings.Contains(text, "image: localhost:5000/ml/gangboost:"+version.Version) {
			t.Errorf("%s compiled with --registry localhost:5000/ml/ still names %s or not localhost:5000/ml/gangboost", what, version.DefaultRegistry)
		}
	}
	if code, _, errs := gangboost(t, "pipeline", "compile", "--registry", version.DefaultRegistry, "--components-dir", dir); code != 0 {
		t.Fatalf("compile --registry %s: exit %d: %s", version.DefaultRegistry, code, errs)
	}
	for _, name := range components.Names() {
		got, _ := os.ReadFile(filepath.Join(dir, name, "component.yaml"))
		want, _ := components.YAML(name)
		if !bytes.Equal(got, want) {
			t.Errorf("%s compiled with the default registry differs from the committed component.yaml", name)
		}
	}
	for _, bad := range []string{"https://example.com/ml", "example.com/ml@sha256:ab", "", "a b"} {
		empty := t.TempDir()
		code, _, errs := gangboost(t, "pipeline", "compile", "--registry", bad, "--components-dir", empty)
		if entries, _ := os.ReadDir(empty); code != 2 || !strings.Contains(errs, "want a registry and path") || len(entries) != 0 {
			t.Errorf("--registry %q: exit %d, %d files written: %s", bad, code, len(entries), errs)
		}
	}
}

// TestUploadThenVersion: the first upload creates the pipeline; a changed package becomes a new
// version; the same package again is reported as the version it already is.
func TestUploadThenVersion(t *testing.T) {
	noTokenFile(t)
	srv := kfpfake.New(t)
	code, out, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, "--namespace", "team-a", pkgFile)
	if code != 0 {
		t.Fatalf("upload: exit %d: %s", code, errs)
	}
	ps := srv.Pipelines()
	if len(ps) != 1 || ps[0].Name != "xgboost-volcano" || ps[0].Namespace != "team-a" || !strings.HasPrefix(ps[0].Description, "Prepares a data set") {
		t.Fatalf("server holds %+v", ps)
	}
	if !strings.Contains(out, "uploaded pipeline xgboost-volcano: pipeline_id "+ps[0].ID) || !strings.Contains(out, srv.URL+"/#/pipelines/details/"+ps[0].ID) {
		t.Errorf("stdout: %s", out)
	}
	upload := srv.Requests()[1]
	if upload.Method != "POST" || upload.Path != "/apis/v2beta1/pipelines/upload" || upload.Query.Get("name") != "xgboost-volcano" ||
		upload.Query.Get("display_name") != "xgboost-volcano" || upload.Query.Get("namespace") != "team-a" {
		t.Errorf("upload request %+v", upload)
	}

	changed := filepath.Join(t.TempDir(), "xgboost-volcano.yaml")
	b, _ := os.ReadFile(pkgFile)
	os.WriteFile(changed, append(b, []byte("# changed\n")...), 0o644)
	code, out, errs = gangboost(t, "pipeline", "upload", "--host", srv.URL, "--namespace", "team-a", "--version", "v2", changed)
	if code != 0 || !strings.Contains(out, "uploaded version v2 of pipeline xgboost-volcano") {
		t.Fatalf("second upload: exit %d: %s%s", code, out, errs)
	}
	if vs := srv.Pipelines()[0].Versions; len(vs) != 2 || vs[1].Name != "v2" {
		t.Fatalf("versions %+v", vs)
	}
	code, out, errs = gangboost(t, "pipeline", "upload", "--host", srv.URL, "--namespace", "team-a", "--version", "v2", changed)
	if code != 0 || !strings.Contains(out, "already has version v2") {
		t.Fatalf("same version again: exit %d: %s%s", code, out, errs)
	}
	if vs := srv.Pipelines()[0].Versions; len(vs) != 2 {
		t.Errorf("%d versions after re-uploading v2", len(vs))
	}
}

func TestUploadRefusesABrokenPackage(t *testing.T) {
	noTokenFile(t)
	srv := kfpfake.New(t)
	b, _ := os.ReadFile(pkgFile)
	broken := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(broken, []byte(strings.Replace(string(b), "          pvcMount:\n", "          pvcMounts:\n", 1)), 0o644)
	code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, broken)
	if code != 1 || !strings.Contains(errs, "platform document") || len(srv.Requests()) != 0 {
		t.Errorf("broken platform document: exit %d, %d requests: %s", code, len(srv.Requests()), errs)
	}
}

// TestToken: --token, else $KFP_TOKEN, else the in-cluster token file; a missing token is a
// clear error.
func TestToken(t *testing.T) {
	noTokenFile(t)
	srv := kfpfake.New(t)
	srv.Token = "s3cret"
	code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, pkgFile)
	if code != 1 || !strings.Contains(errs, "401 Unauthorized") || !strings.Contains(errs, "--token") {
		t.Errorf("without a token: exit %d: %s", code, errs)
	}
	if code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, "--token", "s3cret", pkgFile); code != 0 {
		t.Errorf("--token: exit %d: %s", code, errs)
	}
	t.Setenv("KFP_TOKEN", "s3cret")
	if code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, "--version", "b", pkgFile); code != 0 {
		t.Errorf("$KFP_TOKEN: exit %d: %s", code, errs)
	}
	t.Setenv("KFP_TOKEN", "")
	os.WriteFile(kfpapi.TokenFile, []byte("s3cret\n"), 0o600)
	t.Setenv("KFP_HOST", srv.URL)
	if code, _, errs := gangboost(t, "pipeline", "upload", "--version", "c", pkgFile); code != 0 {
		t.Errorf("token file and $KFP_HOST: exit %d: %s", code, errs)
	}
}

// TestRun: a run of the newest version with parameters typed as the pipeline declares them.
func TestRun(t *testing.T) {
	noTokenFile(t)
	srv := kfpfake.New(t)
	code, _, errs := gangboost(t, "pipeline", "run", "--host", srv.URL)
	if code != 1 || !strings.Contains(errs, "no pipeline named xgboost-volcano") || !strings.Contains(errs, "gangboost pipeline upload") {
		t.Errorf("run before upload: exit %d: %s", code, errs)
	}
	if code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, pkgFile); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := gangboost(t, "pipeline", "run", "--host", srv.URL, "--experiment", "iris", "--name", "iris 1",
		"--param", "workers=3", "--param", "max_depth=4", "--param", "eta=0.3", "--param", "tolerance=0.05", "--param", "objective=multi:softprob")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	runs := srv.Runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	p, exp := srv.Pipelines()[0], srv.Experiments()
	if len(exp) != 1 || exp[0].Name != "iris" || exp[0].Namespace != "" {
		t.Fatalf("experiments %+v: want iris created", exp)
	}
	got, _ := json.Marshal(runs[0])
	want := `{"display_name":"iris 1","experiment_id":"` + exp[0].ID + `","pipeline_version_reference":{"pipeline_id":"` + p.ID + `","pipeline_version_id":"` + p.Versions[0].ID +
		`"},"run_id":"` + runs[0]["run_id"].(string) + `","runtime_config":{"parameters":{"eta":"0.3","max_depth":"4","objective":"multi:softprob","tolerance":0.05,"workers":3}}}`
	if string(got) != want {
		t.Errorf("run body\n got %s\nwant %s", got, want)
	}
	if want := "created experiment iris in namespace \"\" (" + exp[0].ID + ")\nrun " + runs[0]["run_id"].(string) + "\n" + srv.URL + "/#/runs/details/" + runs[0]["run_id"].(string) + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--param", "workers=many"}, `parameter workers is NUMBER_INTEGER: "many" is not an integer`},
		{[]string{"--param", "worker=2"}, `the pipeline has no parameter "worker"`},
		{[]string{"--pipeline-id", p.ID, "--version-id", "nope"}, "404 Not Found: PipelineVersion nope not found"},
		{[]string{"--pipeline", "other"}, "no pipeline named other"},
	} {
		code, _, errs := gangboost(t, append([]string{"pipeline", "run", "--host", srv.URL}, c.args...)...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, errs, c.want)
		}
	}
	if code, _, errs := gangboost(t, "pipeline", "run", "--pipeline-id", p.ID, "--version-id", p.Versions[0].ID, "--host", srv.URL); code != 0 {
		t.Errorf("--pipeline-id --version-id: exit %d: %s", code, errs)
	}

	// A listing without the spec: the version is fetched to type the parameters.
	srv.ListsWithoutSpec = true
	if code, _, errs := gangboost(t, "pipeline", "run", "--host", srv.URL, "--param", "max_depth=5"); code != 0 {
		t.Fatalf("run with a spec-less listing: exit %d: %s", code, errs)
	}
	runs = srv.Runs()
	if got, _ := json.Marshal(runs[len(runs)-1]["runtime_config"]); string(got) != `{"parameters":{"max_depth":"5"}}` {
		t.Errorf("runtime_config %s", got)
	}
}

// TestRunMultiUser: against KFP in multi-user mode (Kubeflow's profiles), a run needs an
// experiment in the caller's namespace: --experiment finds or creates it there and the run lands
// in that namespace; without it, or without --namespace, or in a namespace the caller's token may
// not use, the CLI says what to change.
func TestRunMultiUser(t *testing.T) {
	noTokenFile(t)
	srv := kfpfake.New(t)
	srv.MultiUser, srv.Access = true, map[string][]string{"team-a-token": {"team-a"}}
	gb := func(args ...string) (int, string, string) { // "pipeline", "upload|run", flags...
		return gangboost(t, append([]string{args[0], args[1], "--host", srv.URL, "--token", "team-a-token"}, args[2:]...)...)
	}
	if code, _, errs := gb("pipeline", "upload", "--namespace", "team-b", pkgFile); code != 1 || !strings.Contains(errs, "403") || !strings.Contains(errs, "team-b") {
		t.Errorf("upload into another profile: exit %d: %s", code, errs)
	}
	if code, _, errs := gb("pipeline", "upload", "--namespace", "team-a", pkgFile); code != 0 {
		t.Fatalf("upload into the caller's profile: exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--namespace", "team-a"}, []string{"Experiment id can not be empty in multi-user mode", "give --experiment NAME"}},
		{[]string{"--experiment", "iris"}, []string{"no pipeline named xgboost-volcano", "--namespace"}},
		{[]string{"--experiment", "iris", "--pipeline-id", srv.Pipelines()[0].ID}, []string{"empty namespace in multi-user mode", "give --namespace"}},
		{[]string{"--experiment", "iris", "--namespace", "team-b", "--pipeline-id", srv.Pipelines()[0].ID}, []string{"403", "team-b", "your own profile's namespace"}},
	} {
		code, _, errs := gb(append([]string{"pipeline", "run"}, c.args...)...)
		for _, w := range c.want {
			if code != 1 || !strings.Contains(errs, w) {
				t.Errorf("%v: exit %d: %s; want it to say %q", c.args, code, errs, w)
			}
		}
	}
	if n := len(srv.Runs()); n != 0 {
		t.Fatalf("%d runs were created by refused requests", n)
	}
	code, out, errs := gb("pipeline", "run", "--namespace", "team-a", "--experiment", "iris", "--param", "workers=2")
	if code != 0 || !strings.Contains(out, `created experiment iris in namespace "team-a"`) {
		t.Fatalf("run with --experiment: exit %d: %s%s", code, out, errs)
	}
	code, out, errs = gb("pipeline", "run", "--namespace", "team-a", "--experiment", "iris")
	if code != 0 || strings.Contains(out, "created experiment") {
		t.Fatalf("second run: exit %d: %s%s; want the experiment reused", code, out, errs)
	}
	exps, runs := srv.Experiments(), srv.Runs()
	if len(exps) != 1 || exps[0].Namespace != "team-a" || len(runs) != 2 {
		t.Fatalf("experiments %+v, %d runs: want one experiment in team-a and two runs", exps, len(runs))
	}
	for _, r := range runs {
		if r["experiment_id"] != exps[0].ID || r["namespace"] != "team-a" {
			t.Errorf("run %v: want experiment %s in namespace team-a", r, exps[0].ID)
		}
	}
}

func TestUsage(t *testing.T) {
	noTokenFile(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, 0, "gangboost 0.1.0"},
		{nil, 2, "usage:"},
		{[]string{"pipeline", "nope"}, 2, `unknown pipeline command "nope"`},
		{[]string{"pipeline", "upload", "--host", "http://x"}, 2, "usage: gangboost pipeline upload"},
		{[]string{"pipeline", "upload", pkgFile}, 1, "--host is required"},
		{[]string{"pipeline", "run", "--host", "localhost:8080"}, 1, "want an http:// or https:// URL"},
		{[]string{"pipeline", "run", "--local"}, 2, ""}, // no package named
		{[]string{"pipeline", "run", "-h"}, 0, "-param"},
	} {
		code, out, errs := gangboost(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d (want %d): %s%s; want %q", c.args, code, c.code, out, errs, c.want)
		}
	}
}

// TestServerErrors: the API server's error bodies become one clear line naming the call.
func TestServerErrors(t *testing.T) {
	noTokenFile(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/v2beta1/pipelines":
			w.Write([]byte(`{}`)) // no pipelines: gRPC-gateway leaves empty fields out
		case "/apis/v2beta1/pipelines/upload":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error_message":"Failed to create a pipeline and a pipeline version","error_details":"Failed to create a pipeline and a pipeline version: InternalServerError: database is locked\ngithub.com/kubeflow/pipelines/backend/src/apiserver/resource.(*ResourceManager).CreatePipelineAndPipelineVersion\n\t/go/src/resource_manager.go:412"}`))
		}
	}))
	defer srv.Close()
	code, _, errs := gangboost(t, "pipeline", "upload", "--host", srv.URL, pkgFile)
	want := "gangboost: KFP API POST /apis/v2beta1/pipelines/upload: 500 Internal Server Error: Failed to create a pipeline and a pipeline version: InternalServerError: database is locked\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q; want %q", code, errs, want)
	}
}

// gangboost rollback names what it needs before it calls a cluster: one InferenceService, a
// namespace, a cluster to reach.
func TestRollbackArguments(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rollback"}, 2, "usage: gangboost rollback"},
		{[]string{"rollback", "a", "b"}, 2, "usage: gangboost rollback"},
		{[]string{"rollback", "--timeout", "0s", "iris"}, 2, "usage: gangboost rollback"},
		{[]string{"rollback", "--kubeconfig", kubeconfig, "--namespace", "team-a", "iris"}, 1, "gangboost rollback:"},
	} {
		code, _, stderr := gangboost(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("gangboost %v: exit %d, stderr %q; want %d with %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
