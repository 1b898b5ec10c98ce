package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/report"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/trainflags"
)

// The launch-xgboostjob component's outputs (components/launch-xgboostjob/component.yaml).
const (
	OutputModel    = "model"     // system.Model, uri pvc://<claim>/models/<model>/<version>
	OutputMetrics  = "metrics"   // system.Metrics, the final value of every metric
	OutputModelURI = "model_uri" // the same URI as a string: tasks cannot take pvc:// artifacts
	OutputJobName  = "job_name"
	// OutputLearningCurve is a system.HTML page: the per-round metrics of metadata.json as line
	// charts.
	OutputLearningCurve = "learning_curve"
)

// DefaultFSGroup is the trainer pods' default fsGroup: the images' user and group (65532), so
// a claim whose volume kubelet can chown is writable by the trainer.
const DefaultFSGroup = 65532

// Defaults are the settings a component input may leave out.
type Defaults struct {
	Namespace string // the namespace the step runs in
	Image     string // the trainer image
	// Build is what Image's libxgboost was built with (OwnTrainerBuild), nil when unknown; it
	// applies to a job that runs Image.
	Build *TrainerBuild
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
	// Each integer input is range-checked as it converts, against the Go type it lands in.
	integer := func(name string, def, lo, hi int64) int64 {
		v, err := e.IntIn(name, def, lo, hi)
		errs = append(errs, err)
		return v
	}
	j := &Job{
		API:             str("job_api", APIXGBoostJob),
		TrainingRuntime: str("training_runtime", DefaultTrainingRuntime),
		Identity:        Identity{RunID: str("run_id", ""), TaskName: str("task_name", "")},
		Namespace:       str("namespace", d.Namespace),
		Image:           str("image", d.Image),
		Workers:         int32(integer("workers", 1, 0, math.MaxInt32)),
		Data: Data{Train: str("train_data", ""), Eval: str("eval_data", ""), Schema: str("data_schema", ""), Dataset: str("dataset", ""),
			ObjectStore: ObjectStore{Config: objectstore.FromInputs(str), Secret: str("object_store_secret", ""),
				AccessKeyKey: str("object_store_access_key_key", DefaultAccessKeyKey), SecretKeyKey: str("object_store_secret_key_key", DefaultSecretKeyKey)}},
		Resources: Resources{CPU: str("cpu", "1"), Memory: str("memory", "1Gi"), GPUs: integer("gpus", 0, 0, math.MaxInt32)},
		Claim:     str("pvc_name", ""),
		MountPath: str("pvc_mount_path", "/mnt/pvc"),
		ModelName: str("model_name", ""), ModelVersion: str("model_version", ""), ModelStore: str("model_store", ""),
		Port: int32(integer("master_port", 9999, 1, 65535)),
		Gang: Gang{
			MinAvailable:    int32(integer("min_available", 0, 0, math.MaxInt32)),
			Queue:           str("queue", "ml-training"),
			PriorityClass:   str("priority_class", ""),
			ScheduleTimeout: time.Duration(integer("schedule_timeout_seconds", 600, 0, math.MaxInt32)) * time.Second,
		},
		CleanPodPolicy: str("clean_pod_policy", "Running"),
		RestartPolicy:  str("restart_policy", RestartNever),
		ServiceAccount: str("service_account", ""),
	}
	switch ow := str("overwrite", "false"); ow {
	case "false":
	case "true":
		j.Overwrite = true
	default:
		errs = append(errs, fmt.Errorf("overwrite %q: want true or false", ow))
	}
	if j.ModelVersion == "" {
		j.ModelVersion = DefaultModelVersion(j.Identity.RunID)
	}
	if j.API != APIXGBoostJob && j.API != APITrainJob {
		errs = append(errs, fmt.Errorf("job_api %q: want %s (Training Operator v1 XGBoostJob) or %s (Kubeflow Trainer v2 TrainJob)", j.API, APIXGBoostJob, APITrainJob))
	}
	if j.API == APITrainJob && j.Gang.MinAvailable != 0 && j.Gang.MinAvailable != j.Replicas() {
		errs = append(errs, fmt.Errorf("min_available %d with job_api %s: Trainer v2's Volcano PodGroup always needs all %d pods; leave min_available 0", j.Gang.MinAvailable, APITrainJob, j.Replicas()))
	}
	if j.API == APITrainJob && j.Resources.GPUs > 1 {
		// Trainer's XGBoost plugin counts a worker per GPU (DMLC_NUM_WORKER = nodes x GPUs), but
		// gangboost-train is one process per pod: the tracker would wait for workers that never come.
		errs = append(errs, fmt.Errorf("gpus %d with job_api %s: Trainer v2 would expect %d XGBoost workers per node and gangboost-train runs one; use gpus 0 or 1 per node, or job_api %s", j.Resources.GPUs, APITrainJob, j.Resources.GPUs, APIXGBoostJob))
	}
	if v := integer("backoff_limit", -1, -1, math.MaxInt32); v >= 0 {
		n := int32(v)
		j.BackoffLimit = &n
	}
	if v := integer("active_deadline_seconds", 0, 0, kfp.MaxExactInteger); v > 0 {
		j.ActiveDeadlineSeconds = &v
	}
	if v := integer("ttl_seconds_after_finished", DefaultJobTTLSeconds, -1, math.MaxInt32); v >= 0 {
		n := int32(v)
		j.TTLSecondsAfterFinished = &n
	}
	// The pod security context: -1 leaves a field unset (the image's user, no fsGroup).
	for _, id := range []struct {
		input string
		def   int64
		dst   **int64
	}{{"fs_group", DefaultFSGroup, &j.Security.FSGroup}, {"run_as_user", -1, &j.Security.RunAsUser}, {"run_as_group", -1, &j.Security.RunAsGroup}} {
		if v := integer(id.input, id.def, -1, math.MaxUint32); v >= 0 {
			*id.dst = &v
		}
	}
	// Each of the trainer's tunable flags is the input of the same name; an input without a value
	// (or with an empty one) leaves the trainer's default.
	for _, flag := range trainflags.Tunables {
		if v := str(trainflags.InputName(flag), ""); v != "" {
			j.TrainerFlags = append(j.TrainerFlags, "--"+flag, v)
		}
	}
	// A system.Dataset artifact in an object store (KFP's MinIO: minio://mlpipeline/...) is the
	// training data when given; the trainer reads it from there.
	if uri, ok := e.InputArtifactURI("train_dataset"); ok {
		if !dataset.IsObjectURI(uri) {
			errs = append(errs, fmt.Errorf("train_dataset: artifact URI %q: the trainer reads artifacts from an object store (minio:// or s3://); give data on the claim as train_data", uri))
		} else if j.Data.Train != "" {
			errs = append(errs, fmt.Errorf("train_dataset (%s) and train_data (%s) both given: give one", uri, j.Data.Train))
		} else {
			j.Data.Train = uri
		}
	}
	// The placement inputs are the pod spec's own types: a misspelt field is refused by name.
	_, err := e.JSON("tolerations", &j.Placement.Tolerations)
	errs = append(errs, err)
	_, err = e.JSON("node_selector", &j.Placement.NodeSelector)
	errs = append(errs, err)
	var affinity corev1.Affinity
	if given, err := e.JSON("affinity", &affinity); err != nil {
		errs = append(errs, err)
	} else if given && (affinity != corev1.Affinity{}) {
		j.Placement.Affinity = &affinity
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
	if path.IsAbs(j.MountPath) {
		j.MountPath = path.Clean(j.MountPath) // "/mnt/pvc/" is where the volume mounts too
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
	if j.Image == d.Image {
		j.Build = d.Build
	}
	j.Name = JobName(j.Identity)
	if err := j.Validate(); err != nil {
		return nil, "", err
	}
	return j, local, nil
}

// DefaultJobTTLSeconds is how long a finished XGBoostJob is kept by default (a day): long enough to
// read its pods' logs and for a retried step to adopt it, without every run's job piling up.
const DefaultJobTTLSeconds = 86400

// WriteOutputs records a finished job's outputs: the Model artifact (its metadata from the
// version's metadata.json), the final metrics, model_uri and job_name. localClaim is where this
// process sees the claim.
func WriteOutputs(ctx context.Context, e *kfp.Executor, j *Job, localClaim string) error {
	uri, err := j.ModelURI()
	if err != nil {
		return err
	}
	md, err := j.ReadModelMetadata(ctx, localClaim)
	if errors.Is(err, ErrNoStoreCredentials) {
		// The trainer published it; this step cannot read it back. The model's location is what
		// the next steps need; its metrics stay in the trainer's log.
		fmt.Printf("model %s: metadata not read (%v); the Model artifact carries its URI only\n", uri, err)
		md = &modeldir.Metadata{}
	} else if err != nil {
		return err
	}
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
	if len(md.ResumedAt) > 0 {
		rounds := make([]any, len(md.ResumedAt))
		for i, r := range md.ResumedAt {
			rounds[i] = r
		}
		modelMeta["resumed_at_rounds"] = rounds
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
	if err := writeLearningCurve(e, md, uri); err != nil {
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

// writeLearningCurve writes the learning_curve page to its artifact's path (KFP uploads it and
// the UI shows it).
func writeLearningCurve(e *kfp.Executor, md *modeldir.Metadata, uri string) error {
	if err := e.SetArtifact(OutputLearningCurve, "", map[string]any{"rounds": md.Rounds}); err != nil {
		return err
	}
	p, err := e.OutputArtifactPath(OutputLearningCurve)
	if err != nil {
		return err
	}
	page := report.LearningCurve("Learning curve of "+uri, md.Metrics,
		[2]string{"objective", md.Objective}, [2]string{"rounds", strconv.Itoa(md.Rounds)},
		[2]string{"best iteration", strconv.Itoa(md.BestIteration)}, [2]string{"workers (world size)", strconv.Itoa(md.WorldSize)})
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write artifact %s: %w", OutputLearningCurve, err)
	}
	if err := os.WriteFile(p, page, 0o644); err != nil {
		return fmt.Errorf("write artifact %s: %w", OutputLearningCurve, err)
	}
	return nil
}

// Inputs are the component's input parameters, in the order component.yaml documents them.
var Inputs = []kfp.Input{
	{Name: "run_id", Type: kfp.String, Description: "the run's UUID: the pipeline passes {{$.pipeline_job_uuid}}"},
	{Name: "task_name", Type: kfp.String, Description: "the task's name: the pipeline passes {{$.pipeline_task_name}}"},
	{Name: "model_name", Type: kfp.String, Description: "the model goes to models/<model_name>/<model_version> on the claim, or under model_store"},
	{Name: "model_version", Type: kfp.String, Default: "", Description: "the version folder; default run-<the run id's first 8 characters>, new for every run. A version that exists is never replaced: the step fails before any job is created"},
	{Name: "model_store", Type: kfp.String, Default: "", Description: "where the model goes: empty for the claim (pvc://<pvc_name>/models/<model_name>/<model_version>); s3://<bucket>/<prefix> for an object store (reached with the object_store_* inputs), the version at s3://<bucket>/<prefix>/<model_name>/<model_version>/ with metadata.json written last"},
	{Name: "overwrite", Type: kfp.String, Default: "false", Description: "true: replace the model_version folder even when another run wrote it; deploy then rolls out what serves it (the pods follow the model's sha256)"},
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding data and models"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where the trainer pods mount the claim"},
	{Name: "pvc_local_path", Type: kfp.String, Default: "", Description: "where this step sees the claim (its pvcMount); default pvc_mount_path"},
	{Name: "train_data", Type: kfp.String, Default: "", Description: "training data: a path on the claim (e.g. datasets/iris/train.csv, a folder of part files) or s3://bucket/key, s3://bucket/prefix/"},
	{Name: "eval_data", Type: kfp.String, Default: "", Description: "evaluation data: a path on the claim"},
	{Name: "data_schema", Type: kfp.String, Default: "", Description: "prepare-data's schema.json on the claim (its schema_path): columns it names as categories are trained as categorical, and metadata.json names their categories"},
	{Name: "dataset", Type: kfp.String, Default: "", Description: "a built-in data set (iris) instead of train_data"},
	{Name: "train_dataset", Artifact: "system.Dataset", Description: "training data as a Dataset artifact in an object store (minio:// or s3:// URI; a folder of part files too) instead of train_data"},
	{Name: "object_store_endpoint", Type: kfp.String, Default: "", Description: "endpoint of s3:// data: host:port, http://host:port or https://host:port; default AWS S3, for minio:// http://minio-service.kubeflow:9000"},
	{Name: "object_store_region", Type: kfp.String, Default: "", Description: "object store region; default the bucket's"},
	{Name: "object_store_path_style", Type: kfp.String, Default: "false", Description: "true: address buckets as endpoint/bucket (MinIO, Ceph)"},
	{Name: "object_store_secret", Type: kfp.String, Default: "", Description: "Secret whose keys become the trainer pods' AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, e.g. mlpipeline-minio-artifact"},
	{Name: "object_store_access_key_key", Type: kfp.String, Default: DefaultAccessKeyKey, Description: "the Secret's key holding the access key"},
	{Name: "object_store_secret_key_key", Type: kfp.String, Default: DefaultSecretKeyKey, Description: "the Secret's key holding the secret key"},
	{Name: "label", Type: kfp.String, Default: "", Description: "label column"},
	{Name: "features", Type: kfp.String, Default: "", Description: "feature columns (a,b,c); default all but the label"},
	{Name: "categorical", Type: kfp.String, Default: "", Description: "feature columns trained as categorical (a,b): each holds category codes, integers from 0"},
	{Name: "format", Type: kfp.String, Default: "", Description: "csv, parquet or libsvm; default from the extension"},
	{Name: "eval_fraction", Type: kfp.String, Default: "", Description: "without eval_data, the fraction of rows held out for evaluation"},
	{Name: "objective", Type: kfp.String, Default: "reg:squarederror"},
	{Name: "num_round", Type: kfp.Integer, Default: 100},
	{Name: "max_depth", Type: kfp.String, Default: "", Description: "empty: XGBoost's default"},
	{Name: "eta", Type: kfp.String, Default: "", Description: "empty: XGBoost's default"},
	{Name: "subsample", Type: kfp.String, Default: "", Description: "empty: XGBoost's default"},
	{Name: "colsample_bytree", Type: kfp.String, Default: "", Description: "empty: XGBoost's default"},
	{Name: "min_child_weight", Type: kfp.String, Default: "", Description: "empty: XGBoost's default"},
	{Name: "reg_lambda", Type: kfp.String, Default: "", Description: "L2 regularisation (XGBoost's lambda); empty: XGBoost's default"},
	{Name: "reg_alpha", Type: kfp.String, Default: "", Description: "L1 regularisation (XGBoost's alpha); empty: XGBoost's default"},
	{Name: "tree_method", Type: kfp.String, Default: "hist"},
	{Name: "nthread", Type: kfp.Integer, Default: 0, Description: "threads per replica; 0 all cores"},
	{Name: "seed", Type: kfp.Integer, Default: 0},
	{Name: "num_class", Type: kfp.String, Default: "", Description: "classes for multi:*; default from the labels"},
	{Name: "eval_metric", Type: kfp.String, Default: "", Description: "a,b; default the objective's"},
	{Name: "early_stopping_rounds", Type: kfp.Integer, Default: 0, Description: "0 off"},
	{Name: "model_format", Type: kfp.String, Default: "json", Description: "json or ubj"},
	{Name: "log_every", Type: kfp.Integer, Default: 1, Description: "log metrics every K rounds"},
	{Name: "checkpoint_every_rounds", Type: kfp.Integer, Default: 0, Description: "write a checkpoint (to checkpoints/<model_name>/<model_version> on the claim) after every N rounds; 0 by time only"},
	{Name: "checkpoint_every_seconds", Type: kfp.Integer, Default: trainflags.DefaultCheckpointEverySeconds, Description: "write a checkpoint once this many seconds have passed since the last; 0 by rounds only"},
	{Name: "xgb_params", Type: kfp.Struct, Default: map[string]any{}, Description: "any other XGBoost parameter, as {key: value}"},
	{Name: "job_api", Type: kfp.String, Default: APIXGBoostJob, Description: "xgboostjob: a Training Operator v1 XGBoostJob; trainjob: a Kubeflow Trainer v2 TrainJob on training_runtime (the local runner ignores it)"},
	{Name: "training_runtime", Type: kfp.String, Default: DefaultTrainingRuntime, Description: "job_api trainjob: the ClusterTrainingRuntime (mlPolicy.xgboost) the TrainJob runs on"},
	{Name: "namespace", Type: kfp.String, Default: "", Description: "where the job runs; default this step's namespace"},
	{Name: "image", Type: kfp.String, Default: "", Description: "trainer image; default this component's image"},
	{Name: "service_account", Type: kfp.String, Default: "", Description: "service account of the trainer pods"},
	{Name: "fs_group", Type: kfp.Integer, Default: DefaultFSGroup, Description: "fsGroup of the trainer pods: the claim's files are made writable to this group (the trainer runs as 65532); -1 none"},
	{Name: "run_as_user", Type: kfp.Integer, Default: -1, Description: "uid the trainer runs as; -1 the image's (65532)"},
	{Name: "run_as_group", Type: kfp.Integer, Default: -1, Description: "gid the trainer runs as; -1 the image's (65532)"},
	{Name: "workers", Type: kfp.Integer, Default: 1, Description: "Workers besides the Master"},
	{Name: "cpu", Type: kfp.String, Default: "1", Description: "CPU per replica (requests = limits)"},
	{Name: "memory", Type: kfp.String, Default: "1Gi", Description: "memory per replica"},
	{Name: "gpus", Type: kfp.Integer, Default: 0, Description: "nvidia.com/gpu per replica"},
	{Name: "tolerations", Type: kfp.List, Default: []any{}, Description: "tolerations of every replica, as in a pod spec, e.g. [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]"},
	{Name: "node_selector", Type: kfp.Struct, Default: map[string]any{}, Description: "node selector of every replica, e.g. {nvidia.com/gpu.present: \"true\"}"},
	{Name: "affinity", Type: kfp.Struct, Default: map[string]any{}, Description: "affinity of every replica, as in a pod spec (nodeAffinity, podAntiAffinity, ...)"},
	{Name: "master_port", Type: kfp.Integer, Default: 9999, Description: "the Master's port (MASTER_PORT)"},
	{Name: "min_available", Type: kfp.Integer, Default: 0, Description: "replicas the gang needs placed together; 0 all"},
	{Name: "queue", Type: kfp.String, Default: "ml-training", Description: "Volcano queue"},
	{Name: "priority_class", Type: kfp.String, Default: "gangboost-training", Description: "priority class of the PodGroup and the pods"},
	{Name: "schedule_timeout_seconds", Type: kfp.Integer, Default: 600, Description: "how long the gang may wait to be placed before the job is deleted and the step fails; 0 forever"},
	{Name: "clean_pod_policy", Type: kfp.String, Default: "Running", Description: "All, Running or None"},
	{Name: "restart_policy", Type: kfp.String, Default: RestartNever, Description: "Never: a failed rank fails the job; OnFailure: the gang restarts (within backoff_limit) and resumes from its newest checkpoint"},
	{Name: "backoff_limit", Type: kfp.Integer, Default: 0, Description: "the job fails once its replicas' restarts reach this (with OnFailure a gang restart counts every replica: workers + 1)"},
	{Name: "active_deadline_seconds", Type: kfp.Integer, Default: 0, Description: "0 none"},
	{Name: "ttl_seconds_after_finished", Type: kfp.Integer, Default: DefaultJobTTLSeconds, Description: "the Training Operator deletes the finished XGBoostJob (and its pods) this long after it ends; -1 keeps it. The model and, for resuming, the checkpoints are on the claim, not in the job (a TrainJob's TTL is its runtime's, manifests/trainer)"},
}

// DefaultTrainingRuntime is the ClusterTrainingRuntime gangboost ships (manifests/trainingruntime.yaml).
const DefaultTrainingRuntime = "gangboost-xgboost"

// Component is the launch-xgboostjob component run from image; component.yaml is generated from it.
func Component(image string) *kfp.Component {
	return &kfp.Component{
		Name:        "launch-xgboostjob",
		Description: "Trains an XGBoost model as a gang-scheduled XGBoostJob (Training Operator v1 + Volcano) and outputs it as a Model artifact and model_uri.",
		Image:       image,
		Inputs:      Inputs,
		Outputs: []kfp.Output{
			{Name: OutputModel, Artifact: "system.Model"},
			{Name: OutputMetrics, Artifact: "system.Metrics"},
			{Name: OutputLearningCurve, Artifact: "system.HTML", Description: "the metrics per round as line charts"},
			{Name: OutputModelURI, Type: kfp.String},
			{Name: OutputJobName, Type: kfp.String},
		},
	}
}
