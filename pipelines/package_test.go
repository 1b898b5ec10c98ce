package pipelines

import (
	"os"
	"strings"
	"testing"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"github.com/kubeflow/pipelines/kubernetes_platform/go/kubernetesplatform"
	"google.golang.org/protobuf/types/known/structpb"
)

func parseCommitted(t *testing.T) *Package {
	t.Helper()
	b, err := os.ReadFile("xgboost-volcano.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCommittedPackage parses the committed file back with the typed protos, strictly (KFP's API
// server drops the whole platform document on one unknown field), and checks it.
func TestCommittedPackage(t *testing.T) {
	p := parseCommitted(t)
	for _, err := range Check(p) {
		t.Error(err)
	}
	if got := p.Spec.GetPipelineInfo().GetName(); got != Name {
		t.Errorf("pipelineInfo.name = %q", got)
	}
	if got := p.Spec.GetSchemaVersion(); got != "2.1.0" {
		t.Errorf("schemaVersion = %q", got)
	}
	tasks := p.Spec.GetRoot().GetDag().GetTasks()
	if len(tasks) != len(Tasks) {
		t.Errorf("%d tasks, want %v", len(tasks), Tasks)
	}
	for _, name := range []string{Launch, Deploy} {
		if tasks[name].GetCachingOptions().GetEnableCache() {
			t.Errorf("task %s: caching enabled; a cache hit would skip the job or the deployment", name)
		}
	}
	// The four steps mount the claim named by the pvc_name parameter at the mount path.
	for _, name := range Tasks {
		exec := p.Spec.GetComponents()["comp-"+name].GetExecutorLabel()
		cfg := p.Kubernetes[exec]
		if len(cfg.GetPvcMount()) != 1 || cfg.GetPvcMount()[0].GetComponentInputParameter() != "pvc_name" || cfg.GetPvcMount()[0].GetMountPath() != "/mnt/pvc" {
			t.Errorf("executor %s: pvcMount = %v, want the claim of pvc_name at /mnt/pvc", exec, cfg.GetPvcMount())
		}
	}
}

// TestWiring: the data flows as the component contract says.
func TestWiring(t *testing.T) {
	tasks := parseCommitted(t).Spec.GetRoot().GetDag().GetTasks()
	from := func(task, input string) string {
		in := tasks[task].GetInputs().GetParameters()[input]
		switch {
		case in.GetTaskOutputParameter() != nil:
			return in.GetTaskOutputParameter().GetProducerTask() + "." + in.GetTaskOutputParameter().GetOutputParameterKey()
		case in.GetComponentInputParameter() != "":
			return "param " + in.GetComponentInputParameter()
		case in.GetRuntimeValue() != nil:
			return "constant " + in.GetRuntimeValue().GetConstant().GetStringValue()
		}
		return "unset"
	}
	for _, c := range []struct{ task, input, want string }{
		{Launch, "train_data", "prepare-data.train_path"},
		{Launch, "eval_data", "prepare-data.test_path"},
		{Launch, "label", "prepare-data.label"},
		{Launch, "run_id", "constant {{$.pipeline_job_uuid}}"},
		{Launch, "task_name", "constant {{$.pipeline_task_name}}"},
		{Launch, "model_name", "param model_name"},
		{Launch, "workers", "param workers"},
		{Launch, "queue", "param queue"},
		{Launch, "schedule_timeout_seconds", "param schedule_timeout_seconds"},
		{Deploy, "model_uri", "launch-xgboostjob.model_uri"},
		{Deploy, "name", "param model_name"},
		{Deploy, "timeout_seconds", "param deploy_timeout_seconds"},
		{Evaluate, "url", "deploy-inferenceservice.url"},
		{Evaluate, "model_name", "deploy-inferenceservice.model_name"},
		{Evaluate, "test_path", "prepare-data.test_path"},
		{Evaluate, "label", "prepare-data.label"},
		{Evaluate, "model_uri", "launch-xgboostjob.model_uri"},
		{Evaluate, "tolerance", "param tolerance"},
		{PrepareData, "dataset", "param dataset"},
		{PrepareData, "pvc_mount_path", "constant /mnt/pvc"},
		// What a platform's pod security and auth ask of a run, settable from the UI.
		{Launch, "fs_group", "param fs_group"},
		{Launch, "run_as_user", "param run_as_user"},
		{Launch, "run_as_group", "param run_as_group"},
		{Deploy, "fs_group", "param fs_group"},
		{Deploy, "run_as_user", "param run_as_user"},
		{Deploy, "run_as_group", "param run_as_group"},
		{Deploy, "deployment_mode", "param deployment_mode"},
		{Evaluate, "auth_token_path", "param auth_token_path"},
	} {
		if got := from(c.task, c.input); got != c.want {
			t.Errorf("%s.%s = %s, want %s", c.task, c.input, got, c.want)
		}
	}
	for task, want := range map[string]string{
		PrepareData: "", Launch: "prepare-data", Deploy: "launch-xgboostjob",
		Evaluate: "deploy-inferenceservice,launch-xgboostjob,prepare-data",
	} {
		if got := strings.Join(tasks[task].GetDependentTasks(), ","); got != want {
			t.Errorf("%s dependentTasks = %s, want %s", task, got, want)
		}
	}
}

// TestCheckCatches: each kind of broken package is reported.
func TestCheckCatches(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(p *Package)
		want   string
	}{
		{"unknown component", func(p *Package) { task(p, Deploy).ComponentRef.Name = "comp-nope" }, `component "comp-nope" does not exist`},
		{"unknown input", func(p *Package) {
			task(p, Evaluate).Inputs.Parameters["nope"] = task(p, Evaluate).Inputs.Parameters["url"]
		}, "input nope is not an input of comp-evaluate"},
		{"unknown pipeline parameter", func(p *Package) {
			task(p, Launch).Inputs.Parameters["workers"].Kind = &pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter{ComponentInputParameter: "nope"}
		}, `pipeline parameter "nope", which does not exist`},
		{"missing producer output", func(p *Package) {
			task(p, Evaluate).Inputs.Parameters["url"].GetTaskOutputParameter().OutputParameterKey = "nope"
		}, "takes deploy-inferenceservice.nope"},
		{"missing producer task", func(p *Package) {
			task(p, Evaluate).Inputs.Parameters["url"].GetTaskOutputParameter().ProducerTask = "nope"
		}, `output of task "nope"`},
		{"required input unset", func(p *Package) { delete(task(p, Deploy).Inputs.Parameters, "model_uri") }, "required input model_uri is not set"},
		{"missing dependency", func(p *Package) { task(p, Evaluate).DependentTasks = []string{Deploy} }, "dependentTasks [deploy-inferenceservice], want"},
		{"cycle", func(p *Package) {
			task(p, PrepareData).DependentTasks = []string{Evaluate}
			task(p, PrepareData).Inputs.Parameters["label"] = &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter{
				TaskOutputParameter: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameterSpec{ProducerTask: Evaluate, OutputParameterKey: "accuracy"}}}
		}, "tasks form a cycle"},
		{"placeholder in command", func(p *Package) {
			cmd := container(p, "exec-evaluate").Fields["command"].GetListValue()
			cmd.Values = append(cmd.Values, structpb.NewStringValue("{{$.inputs.parameters['url']}}"))
		}, "only {{$}} is replaced in command"},
		{"args placeholder of no input", func(p *Package) {
			container(p, "exec-evaluate").Fields["args"] = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
				structpb.NewStringValue("--x={{$.inputs.parameters['nope']}}")}})
		}, "names no inputs parameters"},
		{"partial constant placeholder", func(p *Package) {
			task(p, Launch).Inputs.Parameters["run_id"].GetRuntimeValue().Value = &pipelinespec.ValueOrRuntimeParameter_Constant{Constant: structpb.NewStringValue("run-{{$.pipeline_job_uuid}}")}
		}, "only a whole pipeline placeholder"},
		{"platform executor unknown", func(p *Package) {
			p.Kubernetes["exec-nope"] = p.Kubernetes["exec-evaluate"]
		}, "executor exec-nope is not in deploymentSpec.executors"},
		{"mount of unknown parameter", func(p *Package) {
			p.Kubernetes["exec-evaluate"].PvcMount[0].PvcReference = &kubernetesplatform.PvcMount_ComponentInputParameter{ComponentInputParameter: "claim"}
		}, `pipeline parameter "claim", which does not exist`},
		{"step looks elsewhere than the mount", func(p *Package) {
			p.Kubernetes["exec-evaluate"].PvcMount[0].MountPath = "/data"
		}, "pvc_mount_path is \"/mnt/pvc\" but the claim is mounted at /data"},
		{"step without its mount", func(p *Package) { delete(p.Kubernetes, "exec-prepare-data") }, "task prepare-data takes the claim (pvc_name) but executor exec-prepare-data mounts no claim"},
		{"default of the wrong type", func(p *Package) {
			p.Spec.Root.InputDefinitions.Parameters["workers"].DefaultValue = structpb.NewStringValue("2")
		}, "pipeline parameter workers default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parseCommitted(t)
			c.mutate(p)
			var all []string
			for _, err := range Check(p) {
				all = append(all, err.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), c.want) {
				t.Errorf("Check = %q, want an error containing %q", all, c.want)
			}
		})
	}
}

// TestParseStrict: an unknown field in either document is an error, not dropped.
func TestParseStrict(t *testing.T) {
	b, err := os.ReadFile("xgboost-volcano.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, broken := range map[string]string{
		"spec":     strings.Replace(string(b), "pipelineInfo:\n", "pipelineInfo:\n  nope: 1\n", 1),
		"platform": strings.Replace(string(b), "          pvcMount:\n", "          pvcMounts:\n", 1),
		"mount":    strings.Replace(string(b), "            mountPath: /mnt/pvc\n", "            mountPath: /mnt/pvc\n            readOnly: true\n", 1),
	} {
		if broken == string(b) {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		if _, err := Parse([]byte(broken)); err == nil {
			t.Errorf("%s: an unknown field parsed", name)
		}
	}
}

// TestBuildRejects: the builder refuses wiring its components cannot take.
func TestBuildRejects(t *testing.T) {
	if _, _, err := Build(Options{MountPath: "mnt"}); err == nil {
		t.Error("a relative mount path built")
	}
	saved := Wires
	t.Cleanup(func() { Wires = saved })
	Wires = map[Target]Output{{Evaluate, "url"}: {Deploy, "nope"}}
	if _, _, err := Build(DefaultOptions()); err == nil || !strings.Contains(err.Error(), `no output parameter "nope"`) {
		t.Errorf("wiring a missing output: %v", err)
	}
	Wires = saved
	params := Parameters
	t.Cleanup(func() { Parameters = params })
	Parameters = append(append([]Parameter(nil), params...), Parameter{Name: "x", Feeds: feeds(Launch, "nope")})
	if _, _, err := Build(DefaultOptions()); err == nil || !strings.Contains(err.Error(), `no input "nope"`) {
		t.Errorf("a parameter feeding a missing input: %v", err)
	}
	// prepare-data's seed defaults to 42, launch-xgboostjob's to 0: without a Default of its own, a
	// parameter feeding both would change what one of them does when the run leaves it alone.
	Parameters = append([]Parameter(nil), params...)
	for i := range Parameters {
		if Parameters[i].Name == "seed" {
			Parameters[i].Default = nil
		}
	}
	if _, _, err := Build(DefaultOptions()); err == nil || !strings.Contains(err.Error(), "launch-xgboostjob.seed to 0") {
		t.Errorf("a parameter feeding inputs of different defaults: %v", err)
	}
}

func task(p *Package, name string) *pipelinespec.PipelineTaskSpec {
	return p.Spec.GetRoot().GetDag().GetTasks()[name]
}

func container(p *Package, exec string) *structpb.Struct {
	return p.Spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()[exec].GetStructValue().GetFields()["container"].GetStructValue()
}
