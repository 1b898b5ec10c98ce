package launch

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/modeldir"
)

// The launch-xgboostjob component's outputs (components/launch-xgboostjob/component.yaml).
const (
	OutputModel    = "model"     // system.Model, uri pvc://<claim>/models/<model>/<version>
	OutputMetrics  = "metrics"   // system.Metrics, the final value of every metric
	OutputModelURI = "model_uri" // the same URI as a string: tasks cannot take pvc:// artifacts
	OutputJobName  = "job_name"
)

// trainerFlags maps component inputs to gangboost-train flags; an input without a value (or with an
// empty one) leaves the trainer's default.
var trainerFlags = []struct{ input, flag string }{
	{"label", "--label"},
	{"features", "--features"},
	{"format", "--format"},
	{"eval_fraction", "--eval-fraction"},
	{"objective", "--objective"},
	{"num_round", "--num-round"},
	{"max_depth", "--max-depth"},
	{"eta", "--eta"},
	{"subsample", "--subsample"},
	{"colsample_bytree", "--colsample-bytree"},
	{"min_child_weight", "--min-child-weight"},
	{"lambda", "--lambda"},
	{"alpha", "--alpha"},
	{"tree_method", "--tree-method"},
	{"nthread", "--nthread"},
	{"seed", "--seed"},
	{"num_class", "--num-class"},
	{"eval_metric", "--eval-metric"},
	{"early_stopping_rounds", "--early-stopping-rounds"},
	{"model_format", "--model-format"},
	{"log_every", "--log-every"},
}

// Defaults are the settings a component input may leave out.
type Defaults struct {
	Namespace string // the namespace the step runs in
	Image     string // the trainer image
}

// JobFromExecutor reads the component's inputs into a Job. It also returns where this process sees
// the claim (input pvc_local_path, default pvc_mount_path), to read the model's metadata.
func JobFromExecutor(e *kfp.Executor, d Defaults) (*Job, string, error) {
	var errs []error
	known := map[string]bool{}
	for _, in := range Inputs {
		known[in.Name] = true
	}
	for _, name := range e.ParameterNames() {
		if !known[name] {
			errs = append(errs, fmt.Errorf("unknown input parameter %q (the component's inputs are in component.yaml)", name))
		}
	}
	str := func(name, def string) string {
		v, err := e.String(name, def)
		errs = append(errs, err)
		if v == "" {
			return def
		}
		return v
	}
	integer := func(name string, def int64) int64 {
		v, err := e.Int(name, def)
		errs = append(errs, err)
		return v
	}
	j := &Job{
		Identity:  Identity{RunID: str("run_id", ""), TaskName: str("task_name", "")},
		Namespace: str("namespace", d.Namespace),
		Image:     str("image", d.Image),
		Workers:   int32(integer("workers", 1)),
		Data:      Data{Train: str("train_data", ""), Eval: str("eval_data", ""), Dataset: str("dataset", "")},
		Resources: Resources{CPU: str("cpu", "1"), Memory: str("memory", "1Gi"), GPUs: integer("gpus", 0)},
		Claim:     str("pvc_name", ""),
		MountPath: str("pvc_mount_path", "/mnt/pvc"),
		ModelName: str("model_name", ""), ModelVersion: str("model_version", "v1"),
		Port: int32(integer("master_port", 9999)),
		Gang: Gang{
			MinAvailable:    int32(integer("min_available", 0)),
			Queue:           str("queue", "ml-training"),
			PriorityClass:   str("priority_class", ""),
			ScheduleTimeout: time.Duration(integer("schedule_timeout_seconds", 600)) * time.Second,
		},
		CleanPodPolicy: str("clean_pod_policy", "Running"),
		ServiceAccount: str("service_account", ""),
	}
	if v := integer("backoff_limit", -1); v >= 0 {
		n := int32(v)
		j.BackoffLimit = &n
	}
	if v := integer("active_deadline_seconds", 0); v > 0 {
		j.ActiveDeadlineSeconds = &v
	}
	if v := integer("ttl_seconds_after_finished", -1); v >= 0 {
		n := int32(v)
		j.TTLSecondsAfterFinished = &n
	}
	for _, f := range trainerFlags {
		if v := str(f.input, ""); v != "" {
			j.TrainerFlags = append(j.TrainerFlags, f.flag, v)
		}
	}
	params, err := e.Struct("xgb_params")
	errs = append(errs, err)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		j.TrainerFlags = append(j.TrainerFlags, "--param", k+"="+params[k])
	}
	local := str("pvc_local_path", j.MountPath)
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	if j.Namespace == "" {
		return nil, "", errors.New("namespace: no input value and the step's own namespace is unknown")
	}
	if j.Image == "" {
		return nil, "", errors.New("image: no trainer image given")
	}
	if j.Port <= 0 || j.Port > 65535 {
		return nil, "", fmt.Errorf("master_port = %d, want 1-65535", j.Port)
	}
	j.Name = JobName(j.Identity)
	if err := j.Validate(); err != nil {
		return nil, "", err
	}
	return j, local, nil
}

// ModelURI is the model folder as KServe's storageUri: pvc://<claim>/models/<model>/<version>.
func (j *Job) ModelURI() string { return "pvc://" + j.Claim + "/" + j.ModelPath() }

// WriteOutputs records a finished job's outputs: the Model artifact (its metadata from the folder's
// metadata.json), the final metrics, model_uri and job_name. localClaim is where this process sees
// the claim.
func WriteOutputs(e *kfp.Executor, j *Job, localClaim string) error {
	dir := filepath.Join(localClaim, filepath.FromSlash(j.ModelPath()))
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		return fmt.Errorf("job %s succeeded but its model folder %s has no readable metadata (is the claim %s mounted at %s?): %w", j.Name, dir, j.Claim, localClaim, err)
	}
	uri := j.ModelURI()
	final := map[string]any{}
	for name, values := range md.Metrics {
		if len(values) > 0 {
			final[name] = values[len(values)-1]
		}
	}
	modelMeta := map[string]any{
		"framework":       "xgboost",
		"model_file":      md.ModelFile,
		"model_sha256":    md.ModelSHA256,
		"objective":       md.Objective,
		"num_features":    md.NumFeatures,
		"rounds":          md.Rounds,
		"best_iteration":  md.BestIteration,
		"xgboost_version": md.XGBoostVersion,
		"world_size":      md.WorldSize,
		"job_name":        j.Name,
	}
	if len(md.Classes) > 0 {
		classes := make([]any, len(md.Classes))
		for i, c := range md.Classes {
			classes[i] = c
		}
		modelMeta["classes"] = classes
	}
	if err := e.SetArtifact(OutputModel, uri, modelMeta); err != nil {
		return err
	}
	if err := e.SetArtifact(OutputMetrics, "", final); err != nil {
		return err
	}
	if err := e.SetParameter(OutputModelURI, uri); err != nil {
		return err
	}
	if err := e.SetParameter(OutputJobName, j.Name); err != nil {
		return err
	}
	return e.WriteOutput()
}

// InputType is a component input's KFP parameter type.
type InputType string

// The parameter types the component's inputs use.
const (
	String  InputType = "STRING"
	Integer InputType = "NUMBER_INTEGER"
	Struct  InputType = "STRUCT"
)

// Input is one input parameter of the launch-xgboostjob component; component.yaml is generated from
// Inputs.
type Input struct {
	Name string
	Type InputType
	// Default is nil for a required input.
	Default     any
	Description string
}

// Inputs are the component's input parameters, in the order component.yaml documents them.
var Inputs = []Input{
	{"run_id", String, nil, "the run's UUID: the pipeline passes {{$.pipeline_job_uuid}}"},
	{"task_name", String, nil, "the task's name: the pipeline passes {{$.pipeline_task_name}}"},
	{"model_name", String, nil, "the model goes to models/<model_name>/<model_version> on the claim"},
	{"model_version", String, "v1", ""},
	{"pvc_name", String, "gangboost-models", "the PersistentVolumeClaim holding data and models"},
	{"pvc_mount_path", String, "/mnt/pvc", "where the trainer pods mount the claim"},
	{"pvc_local_path", String, "", "where this step sees the claim (its pvcMount); default pvc_mount_path"},
	{"train_data", String, "", "training data: a path on the claim, e.g. datasets/iris/train.csv"},
	{"eval_data", String, "", "evaluation data: a path on the claim"},
	{"dataset", String, "", "a built-in data set (iris) instead of train_data"},
	{"label", String, "", "label column"},
	{"features", String, "", "feature columns (a,b,c); default all but the label"},
	{"format", String, "", "csv or libsvm; default from the extension"},
	{"eval_fraction", String, "", "without eval_data, the fraction of rows held out for evaluation"},
	{"objective", String, "reg:squarederror", ""},
	{"num_round", Integer, 100, ""},
	{"max_depth", String, "", "empty: XGBoost's default"},
	{"eta", String, "", "empty: XGBoost's default"},
	{"subsample", String, "", "empty: XGBoost's default"},
	{"colsample_bytree", String, "", "empty: XGBoost's default"},
	{"min_child_weight", String, "", "empty: XGBoost's default"},
	{"lambda", String, "", "empty: XGBoost's default"},
	{"alpha", String, "", "empty: XGBoost's default"},
	{"tree_method", String, "hist", ""},
	{"nthread", Integer, 0, "threads per replica; 0 all cores"},
	{"seed", Integer, 0, ""},
	{"num_class", String, "", "classes for multi:*; default from the labels"},
	{"eval_metric", String, "", "a,b; default the objective's"},
	{"early_stopping_rounds", Integer, 0, "0 off"},
	{"model_format", String, "json", "json or ubj"},
	{"log_every", Integer, 1, "log metrics every K rounds"},
	{"xgb_params", Struct, map[string]any{}, "any other XGBoost parameter, as {key: value}"},
	{"namespace", String, "", "where the job runs; default this step's namespace"},
	{"image", String, "", "trainer image; default this component's image"},
	{"service_account", String, "", "service account of the trainer pods"},
	{"workers", Integer, 1, "Workers besides the Master"},
	{"cpu", String, "1", "CPU per replica (requests = limits)"},
	{"memory", String, "1Gi", "memory per replica"},
	{"gpus", Integer, 0, "nvidia.com/gpu per replica"},
	{"master_port", Integer, 9999, "the Master's port (MASTER_PORT)"},
	{"min_available", Integer, 0, "replicas the gang needs placed together; 0 all"},
	{"queue", String, "ml-training", "Volcano queue"},
	{"priority_class", String, "gangboost-training", "priority class of the PodGroup and the pods"},
	{"schedule_timeout_seconds", Integer, 600, "how long the gang may wait to be placed before the job is deleted and the step fails; 0 forever"},
	{"clean_pod_policy", String, "Running", "All, Running or None"},
	{"backoff_limit", Integer, 0, ""},
	{"active_deadline_seconds", Integer, 0, "0 none"},
	{"ttl_seconds_after_finished", Integer, -1, "-1 keep the finished job"},
}
