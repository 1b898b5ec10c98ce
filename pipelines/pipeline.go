// Package pipelines builds the xgboost-volcano KFP pipeline package from the components'
// embedded specs (components/*/component.yaml): PipelineSpec IR whose DAG runs prepare-data ->
// launch-xgboostjob -> deploy-inferenceservice -> evaluate -> promote-model, plus the Kubernetes
// platform document that mounts the claim on every step.
package pipelines

import (
	"fmt"
	"sort"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gangboost/gangboost/components"
	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// Name is the pipeline's name (pipelineInfo.name, and the name it is uploaded under).
const Name = "xgboost-volcano"

// Description is the pipeline's description.
const Description = "Prepares a data set on a PVC, trains XGBoost as a gang-scheduled XGBoostJob (Training Operator + Volcano), serves the model with KServe (gangboost-xgboost, V2) beside the model that serves, evaluates both on the same test set and promotes the new one only if it wins."

// The tasks, each named after the component it runs.
const (
	PrepareData = "prepare-data"
	Launch      = "launch-xgboostjob"
	Deploy      = "deploy-inferenceservice"
	Evaluate    = "evaluate"
	Promote     = "promote-model"
)

// Tasks are the pipeline's tasks in run order.
var Tasks = []string{PrepareData, Launch, Deploy, Evaluate, Promote}

// sdkVersion is the KFP SDK whose IR the package follows (as the components' specs do).
const sdkVersion = "kfp-2.14.3"

// Claim inputs: every component that touches the claim takes both.
const (
	claimInput     = "pvc_name"
	mountPathInput = "pvc_mount_path"
)

// Options are what a compiled package fixes that a run cannot change.
type Options struct {
	// MountPath is where every step mounts the claim. KubernetesExecutorConfig's
	// pvcMount.mountPath is a plain string, not a parameter, so a run-time parameter could not
	// move the mount; the steps get the same path as their pvc_mount_path.
	MountPath string
	// Registry is where every step's image (and so launch-xgboostjob's default trainer image)
	// is pulled from; empty is version.DefaultRegistry. Each image keeps its name and tag.
	Registry string
}

// DefaultOptions are the options of the committed pipelines/xgboost-volcano.yaml.
func DefaultOptions() Options {
	return Options{MountPath: "/mnt/pvc", Registry: version.DefaultRegistry}
}

// Target is one input of one task.
type Target struct{ Task, Input string }

// Parameter is a pipeline parameter and the task inputs it feeds. Its type, and its description
// and default unless set here, are those of the first target's component input; without a
// Default here, every target's component default must be the same (a run that leaves the
// parameter alone then gets what each component would have done on its own).
type Parameter struct {
	Name        string
	Feeds       []Target
	Default     any
	Description string
}

// storeFeeds feeds an object-store input of the same name to every step that reaches the store.
func storeFeeds(input string) []Target {
	var t []Target
	for _, task := range []string{PrepareData, Launch, Deploy, Evaluate} {
		t = append(t, Target{task, input})
	}
	return t
}

// secretFeeds feeds an input naming the store's Secret (or its keys) to every step that reads it.
func secretFeeds(input string) []Target {
	return []Target{{PrepareData, input}, {Launch, input}, {Evaluate, input}}
}

func feeds(task string, inputs ...string) []Target {
	t := make([]Target, 0, len(inputs))
	for _, in := range inputs {
		t = append(t, Target{task, in})
	}
	return t
}

// Parameters are the pipeline's parameters, in the order the README lists them.
var Parameters = []Parameter{
	// Data.
	{Name: "dataset", Feeds: feeds(PrepareData, "dataset")},
	{Name: "dataset_name", Feeds: feeds(PrepareData, "name")},
	{Name: "label", Feeds: feeds(PrepareData, "label")},
	{Name: "test_fraction", Feeds: feeds(PrepareData, "test_fraction")},
	{Name: "seed", Feeds: append(feeds(PrepareData, "seed"), feeds(Launch, "seed")...), Default: 42, Description: "seed of the split and of training"},
	// Gang and resources per replica.
	{Name: "workers", Feeds: feeds(Launch, "workers")},
	{Name: "cpu", Feeds: feeds(Launch, "cpu")},
	{Name: "memory", Feeds: feeds(Launch, "memory")},
	{Name: "gpus", Feeds: feeds(Launch, "gpus")},
	{Name: "tolerations", Feeds: feeds(Launch, "tolerations")},
	{Name: "node_selector", Feeds: feeds(Launch, "node_selector")},
	{Name: "affinity", Feeds: feeds(Launch, "affinity")},
	{Name: "queue", Feeds: feeds(Launch, "queue")},
	{Name: "priority_class", Feeds: feeds(Launch, "priority_class")},
	{Name: "min_available", Feeds: feeds(Launch, "min_available")},
	{Name: "schedule_timeout_seconds", Feeds: feeds(Launch, "schedule_timeout_seconds")},
	{Name: "active_deadline_seconds", Feeds: feeds(Launch, "active_deadline_seconds")},
	{Name: "job_api", Feeds: feeds(Launch, "job_api")},
	{Name: "training_runtime", Feeds: feeds(Launch, "training_runtime")},
	// XGBoost.
	{Name: "objective", Feeds: feeds(Launch, "objective"), Default: "multi:softprob", Description: "XGBoost objective: multi:softprob (Iris), binary:logistic, reg:squarederror, ..."},
	{Name: "num_round", Feeds: feeds(Launch, "num_round"), Description: "boosting rounds"},
	{Name: "max_depth", Feeds: feeds(Launch, "max_depth")},
	{Name: "eta", Feeds: feeds(Launch, "eta")},
	{Name: "subsample", Feeds: feeds(Launch, "subsample")},
	{Name: "colsample_bytree", Feeds: feeds(Launch, "colsample_bytree")},
	{Name: "min_child_weight", Feeds: feeds(Launch, "min_child_weight")},
	{Name: "reg_lambda", Feeds: feeds(Launch, "reg_lambda")},
	{Name: "reg_alpha", Feeds: feeds(Launch, "reg_alpha")},
	{Name: "tree_method", Feeds: feeds(Launch, "tree_method"), Description: "hist, approx or exact"},
	{Name: "num_class", Feeds: feeds(Launch, "num_class")},
	{Name: "eval_metric", Feeds: feeds(Launch, "eval_metric")},
	{Name: "early_stopping_rounds", Feeds: feeds(Launch, "early_stopping_rounds")},
	{Name: "xgb_params", Feeds: feeds(Launch, "xgb_params")},
	{Name: "categorical", Feeds: feeds(Launch, "categorical")},
	// Model and serving.
	{Name: "model_name", Feeds: append(append(feeds(Launch, "model_name"), feeds(Deploy, "name")...), feeds(Promote, "name")...), Default: "iris",
		Description: "the model goes to models/<model_name>/<model_version> on the claim and is served by the InferenceService <model_name>"},
	{Name: "model_version", Feeds: feeds(Launch, "model_version"), Description: "the model's version folder under models/<model_name>/; empty: run-<run id>, new for every run (an existing version is never replaced)"},
	{Name: "overwrite", Feeds: feeds(Launch, "overwrite")},
	// Models in an object store instead of the claim.
	{Name: "model_store", Feeds: feeds(Launch, "model_store")},
	// The object store of s3:// data and of model_store: by default what Kubeflow gives each
	// profile namespace, its in-cluster store and the namespace's own key pair.
	{Name: "object_store_endpoint", Feeds: storeFeeds("object_store_endpoint"), Default: objectstore.KFPMinIOEndpoint,
		Description: "endpoint of s3:// data and of model_store: host:port, http://host:port or https://host:port; default Kubeflow's in-cluster store (empty: AWS S3)"},
	{Name: "object_store_region", Feeds: storeFeeds("object_store_region")},
	{Name: "object_store_path_style", Feeds: storeFeeds("object_store_path_style"), Default: "true",
		Description: "true: address buckets as endpoint/bucket (MinIO, SeaweedFS, Ceph); false: bucket.endpoint (AWS S3)"},
	{Name: "object_store_secret", Feeds: secretFeeds("object_store_secret"), Default: storesecret.KubeflowSecret,
		Description: "Secret of the run's namespace with the store's key pair: prepare-data reads it for s3:// data and evaluate for an s3:// model's metadata, the trainer pods get it for s3:// data and model_store (Kubeflow creates mlpipeline-minio-artifact in each profile)"},
	{Name: "object_store_access_key_key", Feeds: secretFeeds("object_store_access_key_key")},
	{Name: "object_store_secret_key_key", Feeds: secretFeeds("object_store_secret_key_key")},
	{Name: "serving_service_account", Feeds: feeds(Deploy, "service_account")},
	{Name: "serving_priority_class", Feeds: feeds(Deploy, "priority_class")},
	{Name: "serving_runtime_args", Feeds: feeds(Deploy, "runtime_args")},
	// The Kubeflow Model Registry: evaluate registers the version with its metrics, promote-model
	// records which version serves.
	{Name: "registry_url", Feeds: append(feeds(Evaluate, "registry_url"), feeds(Promote, "registry_url")...)},
	{Name: "registry_token_path", Feeds: append(feeds(Evaluate, "registry_token_path"), feeds(Promote, "registry_token_path")...)},
	{Name: "namespace", Feeds: append(append(feeds(Launch, "namespace"), feeds(Deploy, "namespace")...), feeds(Promote, "namespace")...),
		Description: "where the XGBoostJob and the InferenceService go; default the steps' namespace"},
	{Name: "serving_cpu", Feeds: feeds(Deploy, "cpu"), Description: "CPU of each serving replica"},
	{Name: "serving_memory", Feeds: feeds(Deploy, "memory"), Description: "memory of each serving replica"},
	{Name: "min_replicas", Feeds: feeds(Deploy, "min_replicas"), Description: "serving replicas at least"},
	{Name: "max_replicas", Feeds: feeds(Deploy, "max_replicas"), Description: "serving replicas at most"},
	{Name: "deploy_timeout_seconds", Feeds: feeds(Deploy, "timeout_seconds"), Description: "how long the InferenceService may take to become Ready before the deploy step fails"},
	{Name: "deployment_mode", Feeds: feeds(Deploy, "deployment_mode")},
	// Promotion: the new model beside the one that serves, compared on the same test set.
	{Name: "promotion", Feeds: feeds(Deploy, "promotion")},
	{Name: "challenger_traffic_percent", Feeds: feeds(Deploy, "challenger_traffic_percent")},
	{Name: "promote_policy", Feeds: feeds(Evaluate, "promote_policy")},
	{Name: "promote_metric", Feeds: feeds(Evaluate, "promote_metric")},
	{Name: "min_improvement", Feeds: feeds(Evaluate, "min_improvement")},
	{Name: "watch_seconds", Feeds: feeds(Promote, "watch_seconds")},
	{Name: "max_error_rate", Feeds: feeds(Promote, "max_error_rate")},
	{Name: "max_p99_ms", Feeds: feeds(Promote, "max_p99_ms")},
	{Name: "promotion_drain_seconds", Feeds: feeds(Promote, "drain_seconds")},
	// Pod security: a platform's policy (a Kubeflow profile's Pod Security Standard, OpenShift's
	// SCC ranges) applies to the trainer and the predictor pods alike, and the predictor reads
	// what the trainer wrote on the same claim, so one setting serves both.
	{Name: "fs_group", Feeds: append(feeds(Launch, "fs_group"), feeds(Deploy, "fs_group")...),
		Description: "fsGroup of the trainer and predictor pods: the claim's files are made writable to this group (the images run as 65532); -1 none (e.g. where the platform assigns it)"},
	{Name: "run_as_user", Feeds: append(feeds(Launch, "run_as_user"), feeds(Deploy, "run_as_user")...),
		Description: "uid the trainer and predictor pods run as; -1 the image's (65532)"},
	{Name: "run_as_group", Feeds: append(feeds(Launch, "run_as_group"), feeds(Deploy, "run_as_group")...),
		Description: "gid the trainer and predictor pods run as; -1 the image's (65532)"},
	// Evaluation.
	{Name: "tolerance", Feeds: feeds(Evaluate, "tolerance"), Description: "how far the served model's metric may be from the trainer's own evaluation before evaluate fails"},
	{Name: "evaluate_protocol", Feeds: feeds(Evaluate, "protocol"), Description: "V2 encodings evaluate sends: json, binary or both"},
	{Name: "evaluate_timeout_seconds", Feeds: feeds(Evaluate, "timeout_seconds"), Description: "deadline of the evaluation"},
	{Name: "auth_token_path", Feeds: feeds(Evaluate, "auth_token_path")},
	// The claim: every step that touches it gets its name.
	{Name: claimInput, Feeds: []Target{{PrepareData, claimInput}, {Launch, claimInput}, {Deploy, claimInput}, {Evaluate, claimInput}, {Promote, claimInput}}},
}

// Output is one output parameter of one task.
type Output struct{ Task, Parameter string }

// Wires are the task inputs taken from another task's output parameters.
var Wires = map[Target]Output{
	{Launch, "train_data"}:   {PrepareData, "train_path"},
	{Launch, "eval_data"}:    {PrepareData, "test_path"},
	{Launch, "data_schema"}:  {PrepareData, "schema_path"},
	{Launch, "label"}:        {PrepareData, "label"},
	{Deploy, "model_uri"}:    {Launch, "model_uri"},
	{Evaluate, "url"}:        {Deploy, "url"},
	{Evaluate, "model_name"}: {Deploy, "model_name"},
	{Evaluate, "test_path"}:  {PrepareData, "test_path"},
	{Evaluate, "label"}:      {PrepareData, "label"},
	{Evaluate, "model_uri"}:  {Launch, "model_uri"},
	// The champion deploy found serving, measured beside the new model.
	{Evaluate, "champion_url"}:       {Deploy, "champion_url"},
	{Evaluate, "champion_model_uri"}: {Deploy, "champion_model_uri"},
	// The verdict, applied to what deploy put beside the champion.
	{Promote, "model_uri"}:          {Launch, "model_uri"},
	{Promote, "promote"}:            {Evaluate, "promote"},
	{Promote, "decision_reason"}:    {Evaluate, "decision_reason"},
	{Promote, "champion_model_uri"}: {Deploy, "champion_model_uri"},
	{Promote, "challenger"}:         {Deploy, "challenger"},
	{Promote, "challenger_url"}:     {Deploy, "url"},
}

// Result is one output of the pipeline (its root DAG's): a task's output under a name of its own.
type Result struct {
	Name, Task, Output string
}

// Results are the pipeline's outputs: what a pipeline that runs this package as one of its steps
// (loaded as a component with KFP's SDK) passes on downstream.
var Results = []Result{
	{"model", Launch, "model"},
	{"model_uri", Launch, "model_uri"},
	{"training_metrics", Launch, "metrics"},
	{"endpoint_url", Deploy, "url"},
	{"accuracy", Evaluate, "accuracy"},
	{"rmse", Evaluate, "rmse"},
	{"evaluation_metrics", Evaluate, "metrics"},
	{"evaluation_report", Evaluate, "report"},
	{"decision", Evaluate, "decision"},
	{"promoted", Promote, "promoted"},
	{"serving_model_uri", Promote, "serving_model_uri"},
	{"previous_model_uri", Promote, "previous_model_uri"},
}

// constants are the task inputs with a value fixed in the package. KFP's driver replaces a
// constant that is exactly one of its pipeline placeholders with the run's value.
func constants(o Options) map[Target]any {
	c := map[Target]any{
		{Launch, "run_id"}:    "{{$.pipeline_job_uuid}}",
		{Launch, "task_name"}: "{{$.pipeline_task_name}}",
		// The InferenceService records the run that deployed its model.
		{Deploy, "run_id"}:  "{{$.pipeline_job_uuid}}",
		{Promote, "run_id"}: "{{$.pipeline_job_uuid}}",
		// The model registry records the run with the version.
		{Evaluate, "run_id"}: "{{$.pipeline_job_uuid}}",
		// Where this step sees the claim, and where the trainer pods mount it.
		{Launch, "pvc_local_path"}: o.MountPath,
	}
	for _, task := range Tasks {
		c[Target{task, mountPathInput}] = o.MountPath
	}
	return c
}

// cached are the tasks KFP may answer from its cache. None: every step acts outside KFP's
// artifact store (files on the claim, an XGBoostJob, an InferenceService, the live endpoint), so
// a cache hit would skip an effect the next step relies on.
var cached = map[string]bool{}

// component is one component's spec, taken from its component.yaml.
type component struct {
	name     string
	spec     *pipelinespec.ComponentSpec
	executor *structpb.Struct
}

func (c *component) componentName() string { return "comp-" + c.name }

func loadComponent(name string) (*component, error) {
	spec, err := components.Spec(name)
	if err != nil {
		return nil, err
	}
	if len(spec.GetComponents()) != 1 {
		return nil, fmt.Errorf("component %s: component.yaml has %d components, want 1", name, len(spec.GetComponents()))
	}
	var cs *pipelinespec.ComponentSpec
	for _, c := range spec.GetComponents() {
		cs = c
	}
	label := cs.GetExecutorLabel()
	exec := spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()[label].GetStructValue()
	if label == "" || exec == nil {
		return nil, fmt.Errorf("component %s: component.yaml has no executor %q", name, label)
	}
	return &component{name: name, spec: cs, executor: exec}, nil
}

func (c *component) input(name string) (*pipelinespec.ComponentInputsSpec_ParameterSpec, error) {
	in := c.spec.GetInputDefinitions().GetParameters()[name]
	if in == nil {
		return nil, fmt.Errorf("component %s has no input %q (inputs: %v)", c.name, name, sortedKeys(c.spec.GetInputDefinitions().GetParameters()))
	}
	return in, nil
}

// Build composes the pipeline from the embedded component specs.
func Build(o Options) (*pipelinespec.PipelineSpec, *pipelinespec.PlatformSpec, error) {
	if o.MountPath == "" || o.MountPath[0] != '/' {
		return nil, nil, fmt.Errorf("mount path %q: want an absolute path", o.MountPath)
	}
	comps := map[string]*component{}
	for _, name := range Tasks {
		c, err := loadComponent(name)
		if err != nil {
			return nil, nil, err
		}
		comps[name] = c
	}

	taskInputs := map[string]map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{}
	for _, name := range Tasks {
		taskInputs[name] = map[string]*pipelinespec.TaskInputsSpec_InputParameterSpec{}
	}
	set := func(t Target, v *pipelinespec.TaskInputsSpec_InputParameterSpec) error {
		if _, err := comps[t.Task].input(t.Input); err != nil {
			return err
		}
		if taskInputs[t.Task][t.Input] != nil {
			return fmt.Errorf("task %s input %s is wired twice", t.Task, t.Input)
		}
		taskInputs[t.Task][t.Input] = v
		return nil
	}

	// Pipeline parameters: typed and described by the component input they feed first.
	rootInputs := map[string]*pipelinespec.ComponentInputsSpec_ParameterSpec{}
	for _, p := range Parameters {
		first, err := comps[p.Feeds[0].Task].input(p.Feeds[0].Input)
		if err != nil {
			return nil, nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		ps := proto.Clone(first).(*pipelinespec.ComponentInputsSpec_ParameterSpec)
		if p.Description != "" {
			ps.Description = p.Description
		}
		if p.Default != nil {
			v, err := structpb.NewValue(p.Default)
			if err != nil {
				return nil, nil, fmt.Errorf("parameter %s default: %w", p.Name, err)
			}
			ps.DefaultValue = v
		}
		if ps.DefaultValue == nil {
			return nil, nil, fmt.Errorf("parameter %s: %s.%s has no default and the pipeline sets none", p.Name, p.Feeds[0].Task, p.Feeds[0].Input)
		}
		if err := checkType(ps.ParameterType, ps.DefaultValue); err != nil {
			return nil, nil, fmt.Errorf("parameter %s default: %w", p.Name, err)
		}
		ps.IsOptional = true
		rootInputs[p.Name] = ps
		for _, t := range p.Feeds {
			in, err := comps[t.Task].input(t.Input)
			if err != nil {
				return nil, nil, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			if in.ParameterType != ps.ParameterType {
				return nil, nil, fmt.Errorf("parameter %s is %s but %s.%s is %s", p.Name, ps.ParameterType, t.Task, t.Input, in.ParameterType)
			}
			if p.Default == nil && !proto.Equal(in.GetDefaultValue(), first.GetDefaultValue()) {
				return nil, nil, fmt.Errorf("parameter %s: %s.%s defaults to %v but %s.%s to %v; set the parameter's Default",
					p.Name, p.Feeds[0].Task, p.Feeds[0].Input, first.GetDefaultValue().AsInterface(), t.Task, t.Input, in.GetDefaultValue().AsInterface())
			}
			if err := set(t, &pipelinespec.TaskInputsSpec_InputParameterSpec{
				Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter{ComponentInputParameter: p.Name}}); err != nil {
				return nil, nil, err
			}
		}
	}

	// Outputs of one task into inputs of the next.
	deps := map[string]map[string]bool{}
	for _, t := range sortedTargets(Wires) {
		from := Wires[t]
		out := comps[from.Task].spec.GetOutputDefinitions().GetParameters()[from.Parameter]
		if out == nil {
			return nil, nil, fmt.Errorf("task %s input %s: component %s has no output parameter %q", t.Task, t.Input, from.Task, from.Parameter)
		}
		in, err := comps[t.Task].input(t.Input)
		if err != nil {
			return nil, nil, err
		}
		if in.ParameterType != out.ParameterType {
			return nil, nil, fmt.Errorf("task %s input %s is %s but %s output %s is %s", t.Task, t.Input, in.ParameterType, from.Task, from.Parameter, out.ParameterType)
		}
		if err := set(t, &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter{
			TaskOutputParameter: &pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameterSpec{ProducerTask: from.Task, OutputParameterKey: from.Parameter}}}); err != nil {
			return nil, nil, err
		}
		if deps[t.Task] == nil {
			deps[t.Task] = map[string]bool{}
		}
		deps[t.Task][from.Task] = true
	}

	consts := constants(o)
	for _, t := range sortedTargets(consts) {
		v, err := structpb.NewValue(consts[t])
		if err != nil {
			return nil, nil, err
		}
		if err := set(t, &pipelinespec.TaskInputsSpec_InputParameterSpec{Kind: &pipelinespec.TaskInputsSpec_InputParameterSpec_RuntimeValue{
			RuntimeValue: &pipelinespec.ValueOrRuntimeParameter{Value: &pipelinespec.ValueOrRuntimeParameter_Constant{Constant: v}}}}); err != nil {
			return nil, nil, err
		}
	}

	// A required component input the pipeline leaves unset would fail the run at that step.
	for _, name := range Tasks {
		for in, ps := range comps[name].spec.GetInputDefinitions().GetParameters() {
			if !ps.GetIsOptional() && ps.GetDefaultValue() == nil && taskInputs[name][in] == nil {
				return nil, nil, fmt.Errorf("task %s: required input %s is not wired", name, in)
			}
		}
	}

	spec := &pipelinespec.PipelineSpec{
		PipelineInfo:   &pipelinespec.PipelineInfo{Name: Name, Description: Description},
		SchemaVersion:  "2.1.0",
		SdkVersion:     sdkVersion,
		Components:     map[string]*pipelinespec.ComponentSpec{},
		DeploymentSpec: &structpb.Struct{Fields: map[string]*structpb.Value{}},
		Root: &pipelinespec.ComponentSpec{
			InputDefinitions: &pipelinespec.ComponentInputsSpec{Parameters: rootInputs},
			Implementation:   &pipelinespec.ComponentSpec_Dag{Dag: &pipelinespec.DagSpec{Tasks: map[string]*pipelinespec.PipelineTaskSpec{}}},
		},
	}
	executors := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	platform := &pipelinespec.PlatformDeploymentConfig{Executors: map[string]*structpb.Struct{}}
	for _, name := range Tasks {
		c := comps[name]
		spec.Components[c.componentName()] = c.spec
		executors.Fields[c.spec.GetExecutorLabel()] = structpb.NewStructValue(c.executor)
		task := &pipelinespec.PipelineTaskSpec{
			TaskInfo:       &pipelinespec.PipelineTaskInfo{Name: name},
			ComponentRef:   &pipelinespec.ComponentRef{Name: c.componentName()},
			Inputs:         &pipelinespec.TaskInputsSpec{Parameters: taskInputs[name]},
			DependentTasks: sortedKeys(deps[name]),
			CachingOptions: &pipelinespec.PipelineTaskSpec_CachingOptions{EnableCache: cached[name]},
		}
		spec.GetRoot().GetDag().Tasks[name] = task
		if _, mounts := c.spec.GetInputDefinitions().GetParameters()[claimInput]; mounts {
			cfg, err := claimMount(claimInput, o.MountPath)
			if err != nil {
				return nil, nil, err
			}
			platform.Executors[c.spec.GetExecutorLabel()] = cfg
		}
	}
	spec.DeploymentSpec.Fields["executors"] = structpb.NewStructValue(executors)
	if err := addResults(spec, comps); err != nil {
		return nil, nil, err
	}
	return spec, &pipelinespec.PlatformSpec{Platforms: map[string]*pipelinespec.SinglePlatformSpec{
		"kubernetes": {DeploymentSpec: platform}}}, nil
}

// addResults declares Results as the root DAG's outputs, typed and described as the task outputs
// they come from.
func addResults(spec *pipelinespec.PipelineSpec, comps map[string]*component) error {
	defs := &pipelinespec.ComponentOutputsSpec{
		Parameters: map[string]*pipelinespec.ComponentOutputsSpec_ParameterSpec{},
		Artifacts:  map[string]*pipelinespec.ComponentOutputsSpec_ArtifactSpec{},
	}
	outs := &pipelinespec.DagOutputsSpec{
		Parameters: map[string]*pipelinespec.DagOutputsSpec_DagOutputParameterSpec{},
		Artifacts:  map[string]*pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{},
	}
	for _, r := range Results {
		od := comps[r.Task].spec.GetOutputDefinitions()
		if p := od.GetParameters()[r.Output]; p != nil {
			defs.Parameters[r.Name] = proto.Clone(p).(*pipelinespec.ComponentOutputsSpec_ParameterSpec)
			outs.Parameters[r.Name] = &pipelinespec.DagOutputsSpec_DagOutputParameterSpec{Kind: &pipelinespec.DagOutputsSpec_DagOutputParameterSpec_ValueFromParameter{
				ValueFromParameter: &pipelinespec.DagOutputsSpec_ParameterSelectorSpec{ProducerSubtask: r.Task, OutputParameterKey: r.Output}}}
			continue
		}
		if a := od.GetArtifacts()[r.Output]; a != nil {
			defs.Artifacts[r.Name] = proto.Clone(a).(*pipelinespec.ComponentOutputsSpec_ArtifactSpec)
			outs.Artifacts[r.Name] = &pipelinespec.DagOutputsSpec_DagOutputArtifactSpec{ArtifactSelectors: []*pipelinespec.DagOutputsSpec_ArtifactSelectorSpec{
				{ProducerSubtask: r.Task, OutputArtifactKey: r.Output}}}
			continue
		}
		return fmt.Errorf("pipeline output %s: task %s has no output %q", r.Name, r.Task, r.Output)
	}
	spec.GetRoot().OutputDefinitions = defs
	spec.GetRoot().GetDag().Outputs = outs
	return nil
}

// checkType reports whether v is a value of parameter type t.
func checkType(t pipelinespec.ParameterType_ParameterTypeEnum, v *structpb.Value) error {
	ok := false
	switch t {
	case pipelinespec.ParameterType_STRING:
		_, ok = v.GetKind().(*structpb.Value_StringValue)
	case pipelinespec.ParameterType_NUMBER_INTEGER:
		n, isNum := v.GetKind().(*structpb.Value_NumberValue)
		ok = isNum && n.NumberValue == float64(int64(n.NumberValue))
	case pipelinespec.ParameterType_NUMBER_DOUBLE:
		_, ok = v.GetKind().(*structpb.Value_NumberValue)
	case pipelinespec.ParameterType_BOOLEAN:
		_, ok = v.GetKind().(*structpb.Value_BoolValue)
	case pipelinespec.ParameterType_STRUCT:
		_, ok = v.GetKind().(*structpb.Value_StructValue)
	case pipelinespec.ParameterType_LIST:
		_, ok = v.GetKind().(*structpb.Value_ListValue)
	}
	if !ok {
		return fmt.Errorf("%v is not a %s", v.AsInterface(), t)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedTargets[V any](m map[Target]V) []Target {
	keys := make([]Target, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Task != keys[j].Task {
			return keys[i].Task < keys[j].Task
		}
		return keys[i].Input < keys[j].Input
	})
	return keys
}
