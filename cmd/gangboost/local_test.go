package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/test/modelregistry"
	"github.com/gangboost/gangboost/test/s3server"

	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/test/leaktest"
	"github.com/gangboost/gangboost/test/testbin"
	"github.com/parquet-go/parquet-go"
)

// The demo tests run `gangboost pipeline run --local` as `make demo` does: the built binaries
// (make build), the committed package, Iris, 1 Master + 2 Workers.

var demoBinaries = []string{"gangboost", "prepare-data", "launch-xgboostjob", "deploy-inferenceservice", "evaluate",
	"gangboost-train", "gangboost-runtime"}

func requireDemoBinaries(t *testing.T) string {
	t.Helper()
	bin := testbin.Dir(t)
	for _, b := range demoBinaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is not built (run `make build`, or set GANGBOOST_BIN_DIR): %v", b, err)
		}
	}
	return bin
}

type lockedBuffer = syncbuf.Buffer

// demoCommand is the demo's command line; every process of the run inherits mark in its
// environment, for assertNothingLeft.
func demoCommand(bin, work string, mark leaktest.Mark, rounds int, extra ...string) *exec.Cmd {
	args := append([]string{"pipeline", "run", "--local", "../../pipelines/xgboost-volcano.yaml", "--workdir", work,
		"--param", "workers=2", "--param", "num_round=" + strconv.Itoa(rounds), "--grace", "5s"}, extra...)
	cmd := exec.Command(filepath.Join(bin, "gangboost"), args...)
	// The runner sets the local backend's environment itself; the test's own must not leak in.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GANGBOOST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, mark.Env())
	return cmd
}

// assertNothingLeft: no process carries the work folder's state (every process a step starts
// inherits it), no recorded process group has members, and, checked without the runner's own
// process scan, no process carries the test's mark.
func assertNothingLeft(t *testing.T, work string, mark leaktest.Mark, groups []int) {
	t.Helper()
	if left := localrun.ProcessesWithEnv(localrun.EnvLocalState + "=" + filepath.Join(work, "state")); len(left) > 0 {
		t.Errorf("processes started by the run are still running: %v", left)
	}
	for _, g := range groups {
		if m := procgroup.Members(g); len(m) > 0 {
			t.Errorf("recorded process group %d still has %v", g, m)
		}
	}
	if left := mark.Processes(); len(left) > 0 {
		t.Errorf("processes carrying the test's mark %s are still running: %v", mark.Env(), left)
	}
}

// requireMarkedCommand is the positive control of assertNothingLeft's own scan: while the run
// goes, a process whose command line holds command carries the mark, so finding none at the end
// means something.
func requireMarkedCommand(t *testing.T, mark leaktest.Mark, command string) {
	t.Helper()
	procs := mark.Processes()
	for _, p := range procs {
		if strings.Contains(p.Cmdline, command) {
			return
		}
	}
	t.Errorf("no running %s carries the mark %s (marked: %v): the leak check would miss what the run leaves", command, mark.Env(), procs)
}

func TestLocalDemo(t *testing.T) {
	bin := requireDemoBinaries(t)
	work := t.TempDir()
	var out lockedBuffer
	mark := leaktest.New()
	cmd := demoCommand(bin, work, mark, 30)
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("demo took %v", time.Since(start))
	if err != nil {
		t.Fatalf("gangboost pipeline run --local: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"[step 1/5] prepare-data started", "[step 2/5] launch-xgboostjob succeeded", "[step 4/5] evaluate succeeded", "[step 5/5] promote-model succeeded",
		"== gangboost demo: SUCCEEDED (1 Master + 2 Workers)", "confusion matrix:", "endpoint   http://127.0.0.1:", "curl -s http://127.0.0.1:",
		"latency    p50 "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`accuracy\s+([0-9.]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no accuracy in the summary:\n%s", text)
	}
	if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.85 {
		t.Errorf("accuracy %v, want at least 0.85 on Iris", acc)
	}

	// Every artifact is there, as summary.json records it.
	files, _ := filepath.Glob(filepath.Join(work, "pipeline-root", "xgboost-volcano", "*", "summary.json"))
	if len(files) != 1 {
		t.Fatalf("summary files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var res localrun.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"prepare-data":            {"dataset"},
		"launch-xgboostjob":       {"model", "metrics", "learning_curve"},
		"evaluate":                {"metrics", "confusion_matrix", "report"},
		"deploy-inferenceservice": nil,
	}
	var groups []int
	for _, p := range res.Processes {
		groups = append(groups, p.PGID)
	}
	for task, arts := range want {
		tr := res.Task(task)
		if tr == nil || tr.State != localrun.StateSucceeded {
			t.Errorf("task %s: %+v", task, tr)
			continue
		}
		for _, a := range arts {
			if len(tr.Artifacts[a]) == 0 {
				t.Errorf("task %s has no %s artifact", task, a)
			}
		}
	}
	modelURI, _ := res.Task("launch-xgboostjob").Outputs["model_uri"].(string)
	modelDir, ok := res.ClaimPath(modelURI)
	if !ok {
		t.Fatalf("model_uri %q", modelURI)
	}
	if _, err := os.Stat(filepath.Join(modelDir, "metadata.json")); err != nil {
		t.Errorf("model folder: %v", err)
	}
	report, err := os.ReadFile(res.Report)
	if err != nil || !bytes.Contains(report, []byte("system.ClassificationMetrics")) || !bytes.Contains(report, []byte("srcdoc=")) {
		t.Errorf("report %s: %v", res.Report, err)
	}
	if len(groups) == 0 {
		t.Errorf("the deploy step recorded no serving process")
	}
	assertNothingLeft(t, work, mark, groups)
}

// TestLocalDemoChampionChallenger: three demo runs in one workdir. The first model (3 rounds)
// serves; a worse one (2 rounds) is compared with it on the same test set and rejected, the
// first serves on; a better one (30 rounds) is promoted. Each summary says which serves and why,
// and the claim's serving record follows: the promoted model, the first recorded before it.
func TestLocalDemoChampionChallenger(t *testing.T) {
	bin := requireDemoBinaries(t)
	work := t.TempDir()
	mark := leaktest.New()
	demo := func(rounds int) (string, string) {
		t.Helper()
		var out lockedBuffer
		cmd := demoCommand(bin, work, mark, rounds)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("demo with %d rounds: %v\n%s", rounds, err, out.String())
		}
		m := regexp.MustCompile(`model\s+\S+ \((pvc://\S+)\)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no model in the summary:\n%s", out.String())
		}
		return out.String(), m[1]
	}
	serving := func() (string, string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(work, "pvc", "gangboost-models", "serving", "iris.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			ModelURI         string `json:"model_uri"`
			PreviousModelURI string `json:"previous_model_uri"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		return rec.ModelURI, rec.PreviousModelURI
	}
	_, first := demo(3)
	if now, _ := serving(); now != first {
		t.Fatalf("after the first run %s serves, want %s", now, first)
	}
	out, worse := demo(2)
	for _, want := range []string{"decision   " + path.Base(worse) + " rejected, " + path.Base(first) + " kept: logloss ",
		"serving    " + first + " (the champion, kept)", "[promote-model]", "removed challenger " + path.Base(worse)} {
		if !strings.Contains(out, want) {
			t.Errorf("the worse run's output lacks %q:\n%s", want, out)
		}
	}
	if now, _ := serving(); now != first {
		t.Errorf("after the worse run %s serves, want the champion %s", now, first)
	}
	out, better := demo(30)
	if !strings.Contains(out, "decision   "+path.Base(better)+" promoted over "+path.Base(first)+": logloss ") {
		t.Errorf("the better run does not say it was promoted:\n%s", out)
	}
	if now, prev := serving(); now != better || prev != first {
		t.Errorf("after the better run the record says %s (previous %s), want %s (previous %s)", now, prev, better, first)
	}
	assertNothingLeft(t, work, mark, nil)
}

// TestLocalDemoInterrupted interrupts the demo while the gang trains: the run exits 130 and
// nothing it started is left running.
func TestLocalDemoInterrupted(t *testing.T) {
	bin := requireDemoBinaries(t)
	work := t.TempDir()
	var out lockedBuffer
	mark := leaktest.New()
	cmd := demoCommand(bin, work, mark, 100000) // the most rounds a job may have: still training when interrupted
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(90 * time.Second)
	for !strings.Contains(out.String(), "[launch-xgboostjob]") || !regexp.MustCompile(`\[launch-xgboostjob\].*round`).MatchString(out.String()) {
		select {
		case err := <-exited:
			t.Fatalf("the demo ended (%v) before training:\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("no training round within 90s:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	requireMarkedCommand(t, mark, "gangboost-train")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the demo did not stop within 60s of SIGINT:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "[step 2/5] launch-xgboostjob stopped after") {
		t.Errorf("the launch step was not the one stopped:\n%s", out.String())
	}
	// A local gang does not outlive its step: what the run says must be what it does.
	if strings.Contains(out.String(), "keeps running") || !strings.Contains(out.String(), "its replicas are stopped with the step") ||
		!strings.Contains(out.String(), "interrupted; every process the run started is stopped, the training gang's too") {
		t.Errorf("the interrupted run does not say that the gang is stopped (and only that):\n%s", out.String())
	}
	assertNothingLeft(t, work, mark, nil)
}

// TestLocalDemoKeepServing: with --keep-serving the endpoint answers the summary's curl line
// after the run, until SIGINT stops it; then nothing is left.
func TestLocalDemoKeepServing(t *testing.T) {
	bin := requireDemoBinaries(t)
	work := t.TempDir()
	var out lockedBuffer
	mark := leaktest.New()
	cmd := demoCommand(bin, work, mark, 10, "--keep-serving")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(90 * time.Second)
	for !strings.Contains(out.String(), "press Ctrl-C to stop") {
		select {
		case err := <-exited:
			t.Fatalf("the demo ended (%v) instead of serving:\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("not serving within 90s:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	m := regexp.MustCompile(`try\s+(curl .*)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no curl line:\n%s", out.String())
	}
	answer, err := exec.Command("sh", "-c", m[1]).CombinedOutput()
	if err != nil || !bytes.Contains(answer, []byte(`"outputs"`)) {
		t.Errorf("%s: %v\n%s", m[1], err, answer)
	}
	files, _ := filepath.Glob(filepath.Join(work, "pipeline-root", "xgboost-volcano", "*", "summary.json"))
	var groups []int
	if len(files) == 1 {
		b, _ := os.ReadFile(files[0])
		var res localrun.Result
		_ = json.Unmarshal(b, &res)
		for _, p := range res.Processes {
			groups = append(groups, p.PGID)
		}
	}
	if len(groups) == 0 {
		t.Errorf("no serving process recorded")
	}
	requireMarkedCommand(t, mark, "gangboost-runtime")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the demo did not stop within 60s of SIGINT:\n%s", out.String())
	}
	if err != nil {
		t.Errorf("exit %v after serving, want 0\n%s", err, out.String())
	}
	assertNothingLeft(t, work, mark, groups)
}

func TestLocalArguments(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantFile string
		wantRest []string
	}{
		{[]string{"--local", "p.yaml", "--param", "a=1"}, "p.yaml", []string{"--param", "a=1"}},
		{[]string{"--param", "a=1", "--local=p.yaml"}, "p.yaml", []string{"--param", "a=1"}},
		{[]string{"--local", "--keep-serving", "p.yaml"}, "", []string{"--keep-serving", "p.yaml"}},
	} {
		file, rest := localFile(tt.args)
		if file != tt.wantFile || strings.Join(rest, " ") != strings.Join(tt.wantRest, " ") {
			t.Errorf("localFile(%q) = %q %q", tt.args, file, rest)
		}
	}
	for _, tt := range []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"--local"}, 2, "name the pipeline package"},
		{[]string{"--local", "../../pipelines/xgboost-volcano.yaml", "--param", "wokers=2", "--bin-dir", t.TempDir(), "--workdir", t.TempDir()}, 1,
			`unknown pipeline parameter "wokers"; the pipeline's parameters are: `},
		{[]string{"--local", "../../pipelines/xgboost-volcano.yaml", "--param", "workers=two", "--bin-dir", t.TempDir(), "--workdir", t.TempDir()}, 1,
			`want an integer (NUMBER_INTEGER), got "two"`},
		{[]string{"--local", "missing.yaml"}, 1, "missing.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		code := runLocalTo(t.Context(), tt.args, &stdout, &stderr)
		if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.wantCode, tt.wantErr)
		}
	}
}

// TestLocalDemoModelsInObjectStore runs the pipeline with model_store in MinIO and the Kubeflow
// Model Registry: the version is published there whole (model object, then metadata.json with its
// sha256), served from a checked copy, evaluated against its metadata and registered with both
// runs' metrics; after a better second run is promoted the registry names it as what serves; a run
// into an existing version is refused before any job starts and changes nothing.
func TestLocalDemoModelsInObjectStore(t *testing.T) {
	bin := requireDemoBinaries(t)
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	reg := modelregistry.Start(t)
	work := t.TempDir()
	mark := leaktest.New()
	run := func(version string, rounds int) (string, error) {
		var out lockedBuffer
		cmd := demoCommand(bin, work, mark, rounds, "--param", "model_store=s3://models/team-a", "--param", "model_version="+version,
			"--param", "object_store_endpoint="+srv.Endpoint, "--param", "object_store_path_style=true", "--param", "registry_url="+reg.URL)
		cmd.Env = append(cmd.Env, srv.Env()...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := run("v1", 3)
	if err != nil {
		t.Fatalf("run with model_store: %v\n%s", err, out)
	}
	model := srv.Get(t, "models", "team-a/iris/v1/model.json")
	var md modeldir.Metadata
	if err := json.Unmarshal(srv.Get(t, "models", "team-a/iris/v1/metadata.json"), &md); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	if md.ModelSHA256 != hex.EncodeToString(sum[:]) || md.WorldSize != 3 {
		t.Fatalf("metadata in the store: %+v; want the model object's sha256 %x and 3 ranks", md, sum)
	}
	if !strings.Contains(out, "compare with the trainer") {
		t.Errorf("evaluate did not compare with the trainer's metadata in the store:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(work, "pvc", "gangboost-models", "models", "iris")); !os.IsNotExist(err) {
		t.Errorf("the model also went to the claim: %v", err)
	}
	// The registry, read through its REST API: the version, its artifact and metrics, and where it serves.
	v1 := reg.Get(t, "/model_version", url.Values{"name": {"v1"}, "parentResourceId": {reg.Get(t, "/registered_model", url.Values{"name": {"iris"}})["id"].(string)}})
	props := v1["customProperties"].(map[string]any)
	for _, p := range []string{"trainer.eval-mlogloss", "evaluate.accuracy", "evaluate.logloss", "gangboost.model_sha256", "gangboost.run_id"} {
		if props[p] == nil {
			t.Errorf("version v1 lacks the custom property %s: %v", p, props)
		}
	}
	arts := reg.Get(t, "/model_versions/"+v1["id"].(string)+"/artifacts", nil)["items"].([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["uri"] != "s3://models/team-a/iris/v1/" {
		t.Errorf("v1's artifacts %v: want one at s3://models/team-a/iris/v1/", arts)
	}
	serving := func() string {
		t.Helper()
		list := reg.Get(t, "/inference_services", nil)["items"].([]any)
		if len(list) != 1 {
			t.Fatalf("inference services in the registry: %v, want one", list)
		}
		return list[0].(map[string]any)["modelVersionId"].(string)
	}
	if got := serving(); got != v1["id"] {
		t.Errorf("after the first run the registry says version %s serves, want v1 (%s)", got, v1["id"])
	}

	out, err = run("v2", 30)
	if err != nil || !strings.Contains(out, "v2 promoted over v1") {
		t.Fatalf("a better second run: %v\n%s\nwant v2 promoted", err, out)
	}
	rm := reg.Get(t, "/registered_model", url.Values{"name": {"iris"}})["id"].(string)
	v2 := reg.Get(t, "/model_version", url.Values{"name": {"v2"}, "parentResourceId": {rm}})
	if got := serving(); got != v2["id"] {
		t.Errorf("after the promotion the registry says version %s serves, want v2 (%s)", got, v2["id"])
	}

	srv.ResetRequests()
	out, err = run("v1", 3)
	if err == nil || !strings.Contains(out, "iris/v1 exists in s3://models/team-a") || !strings.Contains(out, "no job was created") {
		t.Fatalf("a run into v1 again: %v\n%s\nwant a refusal before any job", err, out)
	}
	for _, r := range srv.Requests() {
		if r.Method != "GET" && r.Method != "HEAD" {
			t.Errorf("the refused run wrote: %s %s/%s", r.Method, r.Bucket, r.Key)
		}
	}
	assertNothingLeft(t, work, mark, nil)
}

// TestLocalDemoParquetCategories runs the package on a Parquet file whose color column holds
// category names (as pandas writes its category dtype): prepare-data writes their codes and names
// them in schema.json, the trainer takes the column as categorical from that schema, the model
// says so and its metadata.json names the codes, and the served model is evaluated on the codes.
func TestLocalDemoParquetCategories(t *testing.T) {
	bin := requireDemoBinaries(t)
	work := t.TempDir()
	data := filepath.Join(t.TempDir(), "colors.parquet")
	names := writeColorsParquet(t, data, 1500)
	var out lockedBuffer
	mark := leaktest.New()
	cmd := demoCommand(bin, work, mark, 20, "--param", "dataset="+data, "--param", "label=y", "--param", "dataset_name=colors",
		"--param", "model_name=colors", "--param", "objective=binary:logistic")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("gangboost pipeline run --local on Parquet categories: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, `column "color" names 6 categories`) {
		t.Errorf("prepare-data did not say it coded the color column:\n%s", text)
	}
	claimDir := filepath.Join(work, "pvc", "gangboost-models")
	var schema struct {
		Columns []struct {
			Name, Type string
			Categories []string
		}
	}
	b, err := os.ReadFile(filepath.Join(claimDir, "datasets", "colors", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if c := schema.Columns[1]; c.Name != "color" || c.Type != "category" || !slices.Equal(c.Categories, names) {
		t.Fatalf("schema.json's color column: %+v, want type category with %q", c, names)
	}
	mds, _ := filepath.Glob(filepath.Join(claimDir, "models", "colors", "*", "metadata.json"))
	if len(mds) != 1 {
		t.Fatalf("model folders: %v", mds)
	}
	md, err := modeldir.ReadMetadata(filepath.Dir(mds[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(md.Categories["color"], names) || len(md.Categories) != 1 {
		t.Errorf("metadata.json categories %q, want color: %q", md.Categories, names)
	}
	model, err := os.ReadFile(filepath.Join(filepath.Dir(mds[0]), "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(model, []byte(`"feature_types":["q","c","q"]`)) {
		t.Errorf("the model's feature types do not make color categorical: %s", regexp.MustCompile(`"feature_types":\[[^\]]*\]`).Find(model))
	}
	// The label follows the color, whose effect changes sign back and forth along the codes.
	m := regexp.MustCompile(`accuracy\s+([0-9.]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no accuracy in the summary:\n%s", text)
	}
	if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.9 {
		t.Errorf("accuracy %v on the served model, want at least 0.9:\n%s", acc, text)
	}
	assertNothingLeft(t, work, mark, nil)
}

// writeColorsParquet writes n rows of x0, color (a category name, dictionary-encoded strings),
// x1 and a label y that the color mostly decides, and returns the color names sorted.
func writeColorsParquet(t *testing.T, path string, n int) []string {
	t.Helper()
	type row struct {
		X0    float64 `parquet:"x0"`
		Color string  `parquet:"color,dict"`
		X1    float64 `parquet:"x1"`
		Y     int64   `parquet:"y"`
	}
	effect := map[string]float64{"red": 2, "green": -2, "blue": 1.5, "amber": -1.5, "violet": 2.5, "cyan": -2.5}
	names := slices.Sorted(maps.Keys(effect))
	r := rand.New(rand.NewSource(7))
	rows := make([]row, n)
	for i := range rows {
		c := names[r.Intn(len(names))]
		rows[i] = row{X0: r.NormFloat64(), Color: c, X1: r.NormFloat64()}
		if effect[c]+0.3*rows[i].X0+0.3*rows[i].X1 > 0 {
			rows[i].Y = 1
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return names
}
