package localrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
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

// TestPackageEnvCannotLoadCode: an executor env that would make the step's program load or run
// code from elsewhere (a shared object by LD_PRELOAD, ...) refuses the package, naming the
// executor and the variable; ordinary configuration passes.
func TestPackageEnvCannotLoadCode(t *testing.T) {
	base, err := os.ReadFile("testdata/tiny-pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withEnv := func(name, value string) []byte {
		return bytes.Replace(base, []byte("        - name: TINY_ENV\n          value: from-the-spec\n"),
			[]byte("        - name: "+name+"\n          value: '"+value+"'\n"), 1)
	}
	for _, tc := range []struct{ name, value, why string }{
		{"LD_PRELOAD", "/tmp/hook.so", "dynamic loader"},
		{"LD_LIBRARY_PATH", "/tmp", "dynamic loader"},
		{"GCONV_PATH", "/tmp", "character set converters"},
		{"GLIBC_TUNABLES", "glibc.malloc.check=3", "glibc"},
		{"PATH", "/tmp:/usr/bin", "starts programs by name"},
		{"KUBECONFIG", "/tmp/kubeconfig", "exec credential plugin"},
		{"GANGBOOST_BIN_DIR", "/tmp", "the runner sets"},
		{"GANGBOOST_NUM_ROUND", "400000", "the trainer takes its flags"},
		{"OMP_TOOL_LIBRARIES", "/tmp/tool.so", "OpenMP"},
		{"BASH_ENV", "/tmp/rc", "bash runs"},
		{"ld_preload", "/tmp/hook.so", "dynamic loader"},
		{"A-B", "x", "letters, digits and _"},
	} {
		_, err := ParsePackage(withEnv(tc.name, tc.value))
		want := `executor exec-produce sets env "` + tc.name + `", which a pipeline package may not set`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("env %s: err %v\nwant %q ... %q", tc.name, err, want, tc.why)
		}
	}
	if _, err := ParsePackage(withEnv("OMP_NUM_THREADS", "2")); err != nil {
		t.Errorf("OMP_NUM_THREADS: %v", err)
	}
	// A package built in memory is checked by Run too.
	p := tinyPackage(t)
	p.Executors["exec-produce"].GetContainer().Env[0].Name = "LD_PRELOAD"
	work := t.TempDir()
	if _, err := Run(context.Background(), Options{Package: p, WorkDir: work, BinDir: work}); err == nil || !strings.Contains(err.Error(), `"LD_PRELOAD"`) {
		t.Errorf("Run: err %v, want the package refused", err)
	}
}

// TestNamesStayInTheWorkDir: a pipeline, task, output artifact or output parameter name that is
// not one path element refuses the package before anything is written, and so does a claim path
// input that no pvcMount mounts; nothing appears outside the work folder.
func TestNamesStayInTheWorkDir(t *testing.T) {
	bin := buildSteps(t)
	for _, tc := range []struct {
		name    string
		edit    func(p *Package, outside string)
		wantErr string
	}{
		{"pipeline name", func(p *Package, outside string) {
			p.Spec.PipelineInfo.Name = "../../../escaped-pipeline"
		}, `pipelineInfo.name: "../../../escaped-pipeline" holds a path separator`},
		{"task name", func(p *Package, outside string) {
			tasks := p.Spec.Root.GetDag().Tasks
			tasks["../../../../escaped-task"] = tasks["consume"]
			delete(tasks, "consume")
		}, `task name: "../../../../escaped-task" holds a path separator`},
		{"output artifact name", func(p *Package, outside string) {
			arts := p.Spec.Components["comp-transform"].OutputDefinitions.Artifacts
			arts["../../../../../escaped-artifact"] = arts["report"]
			delete(arts, "report")
		}, `component comp-transform output artifact name: "../../../../../escaped-artifact" holds a path separator`},
		{"output parameter name", func(p *Package, outside string) {
			params := p.Spec.Components["comp-consume"].OutputDefinitions.Parameters
			params["../../../../../../escaped-param/x"] = params["summary"]
			delete(params, "summary")
		}, `component comp-consume output parameter name: "../../../../../../escaped-param/x" holds a path separator`},
		{"a claim path no pvcMount mounts", func(p *Package, outside string) {
			p.Spec.Components["comp-produce"].InputDefinitions.Parameters["pvc_mount_path"].DefaultValue = structpb.NewStringValue(filepath.Join(outside, "host-folder"))
		}, `task produce: input pvc_mount_path is "OUTSIDE/host-folder", but the executor mounts its claim at /mnt/data (the platform document's pvcMount mountPath)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside := t.TempDir()
			work := filepath.Join(outside, "a", "b", "work")
			p := tinyPackage(t)
			tc.edit(p, outside)
			var out syncBuffer
			_, err := Run(context.Background(), Options{Package: p, WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second,
				Params: map[string]string{"message": "hi"}})
			want := strings.ReplaceAll(tc.wantErr, "OUTSIDE", outside)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err %v\nwant %q\n%s", err, want, out.String())
			}
			var written []string
			_ = filepath.WalkDir(outside, func(path string, d os.DirEntry, err error) error {
				inWork := path == work || strings.HasPrefix(path, work+"/")
				aboveWork := strings.HasPrefix(work, path+"/")
				if err == nil && !inWork && !aboveWork {
					written = append(written, path)
				}
				return nil
			})
			if len(written) > 0 {
				t.Errorf("written outside the work folder: %v", written)
			}
		})
	}
}
