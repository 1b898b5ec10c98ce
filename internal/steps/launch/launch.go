// Package launch runs one training step of a pipeline: it starts (or adopts) a gang-scheduled
// training job through a Backend, reports its progress and why its gang waits, gives up at the
// gang's scheduling deadline, and turns the finished model folder into the step's outputs.
//
// The launcher knows the Backend interface, not Kubernetes or processes: the Kubernetes
// (XGBoostJob) backend lives in package launch/kube, the local process gang backend in package
// launch/local.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/trainflags"

	corev1 "k8s.io/api/core/v1"
)

// Identity is the pipeline step a job belongs to: KFP's run UUID ({{$.pipeline_job_uuid}}) and task
// name ({{$.pipeline_task_name}}). A retried or restarted step has the same identity and adopts the
// job instead of creating a second one.
type Identity struct {
	RunID    string
	TaskName string
}

func (id Identity) String() string { return fmt.Sprintf("run %s task %s", id.RunID, id.TaskName) }

// Resources are what each replica (the Master and every Worker) requests and is limited to.
type Resources struct {
	CPU    string // e.g. "1", "500m"
	Memory string // e.g. "1Gi"
	GPUs   int64  // nvidia.com/gpu
}

// Gang is the all-or-nothing scheduling policy of a job.
type Gang struct {
	// MinAvailable replicas must be placed together; 0 means every replica.
	MinAvailable int32
	// Queue is the Volcano queue; PriorityClass the PodGroup's (and the pods') priority class.
	Queue, PriorityClass string
	// ScheduleTimeout is how long the gang may wait to be placed; then the launcher deletes the job
	// and fails with the reason it waited. 0 waits forever.
	ScheduleTimeout time.Duration
}

// Data is the training input: paths relative to the claim's root, object store URIs
// (s3://bucket/key, s3://bucket/prefix/ of part files, minio://... as KFP names its artifacts),
// or a built-in data set.
type Data struct {
	Train, Eval string
	// Schema is prepare-data's schema.json on the claim: the categories of its category columns.
	Schema  string
	Dataset string // e.g. "iris"
	// ObjectStore reaches s3:// and minio:// data.
	ObjectStore ObjectStore
}

// ObjectStore is how trainer pods reach an object store: the trainer's --s3-* flags, and the
// Kubernetes Secret whose keys become the pods' AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (as
// Kubeflow Pipelines' own mlpipeline-minio-artifact secret, keys accesskey and secretkey, is used).
type ObjectStore struct {
	// Config is the endpoint, region and addressing (the trainer's --s3-* flags).
	objectstore.Config
	// Secret names the Secret; empty: the pods get no credentials from a Secret.
	Secret                     string
	AccessKeyKey, SecretKeyKey string
}

// DefaultAccessKeyKey and DefaultSecretKeyKey are the keys of Kubeflow Pipelines'
// mlpipeline-minio-artifact secret.
const (
	DefaultAccessKeyKey = storesecret.KubeflowAccessKeyKey
	DefaultSecretKeyKey = storesecret.KubeflowSecretKeyKey
)

// Job is one training job, independent of the backend that runs it.
type Job struct {
	// API is the kind of job the gang runs as on a cluster: APIXGBoostJob or APITrainJob.
	API string
	// TrainingRuntime is the ClusterTrainingRuntime a TrainJob runs on (APITrainJob only).
	TrainingRuntime string
	Name            string
	Namespace       string
	Identity        Identity
	// Image of the trainer (gangboost-train).
	Image string
	// Build is what Image's libxgboost was built with, nil when unknown (an image other than
	// gangboost's own): a CPU-only build refuses GPU requests before the job is created.
	Build *TrainerBuild
	// Workers besides the Master (rank 0).
	Workers int32
	Data    Data
	// TrainerFlags are gangboost-train flags other than the data and --model-dir (e.g.
	// --objective, --num-round).
	TrainerFlags []string
	Resources    Resources
	// Claim is the PersistentVolumeClaim holding data and models; MountPath is where the trainer
	// pods see it.
	Claim, MountPath string
	// ModelName and ModelVersion place the model at models/<name>/<version> on the claim, or
	// under ModelStore.
	ModelName, ModelVersion string
	// ModelStore, when set, is the object store base (s3://<bucket>/<prefix>) the model goes to
	// instead of the claim: <base>/<model>/<version>/, reached with Data.ObjectStore's endpoint and
	// credentials.
	ModelStore string
	// Overwrite lets the job replace a model version another job wrote; without it an existing
	// version is refused before the job is created (CheckModelVersion), and the trainer refuses
	// it again when it publishes.
	Overwrite bool
	// Port is the Master's port (xgboostjob-port, MASTER_PORT).
	Port int32
	Gang Gang
	// RestartPolicy is every replica's restartPolicy: Never ("" too) fails the job when a rank
	// fails; OnFailure restarts the failed containers in place, so a gang that lost a rank (its
	// other ranks exit too) starts again and resumes from the newest checkpoint. BackoffLimit
	// then bounds the restarts of all replicas together.
	RestartPolicy string
	// CleanPodPolicy (All, Running, None), BackoffLimit, ActiveDeadlineSeconds and
	// TTLSecondsAfterFinished are the Training Operator's run policy; nil leaves its default.
	CleanPodPolicy          string
	BackoffLimit            *int32
	ActiveDeadlineSeconds   *int64
	TTLSecondsAfterFinished *int32
	ServiceAccount          string
	// Security is the trainer pods' security context.
	Security PodSecurity
	// Placement is where every replica may run (both job APIs).
	Placement Placement
}

// Placement is where the trainer pods may run, as a pod spec says it: tolerations for tainted
// nodes (GPU nodes usually are: nvidia.com/gpu:NoSchedule), a node selector and an affinity. Every
// replica of the gang gets the same, so Volcano places the whole gang on nodes that admit it.
type Placement struct {
	Tolerations  []corev1.Toleration
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
}

// The job APIs a gang runs as on a cluster (the job_api input).
const (
	// APIXGBoostJob is Kubeflow Training Operator v1's kubeflow.org/v1 XGBoostJob.
	APIXGBoostJob = "xgboostjob"
	// APITrainJob is Kubeflow Trainer v2's trainer.kubeflow.org/v1alpha1 TrainJob on a
	// ClusterTrainingRuntime with mlPolicy.xgboost.
	APITrainJob = "trainjob"
)

// PodSecurity is the pod-level security context of the trainer pods; nil leaves the image's
// (or the cluster's) default.
type PodSecurity struct {
	// FSGroup owns the mounted claim's files for the pods (kubelet chowns volumes that support it
	// and adds the group to the containers): the trainer runs as uid 65532 and cannot write a
	// root-owned NFS or CephFS export otherwise.
	FSGroup *int64
	// RunAsUser and RunAsGroup override the image's user (65532) and group.
	RunAsUser, RunAsGroup *int64
}

// Replicas is the number of pods: the Master and the Workers.
func (j *Job) Replicas() int32 { return 1 + j.Workers }

// MinAvailable is the gang's size: Gang.MinAvailable, or every replica.
func (j *Job) MinAvailable() int32 {
	if j.Gang.MinAvailable > 0 {
		return j.Gang.MinAvailable
	}
	return j.Replicas()
}

// ModelPath is the model folder relative to the claim's root, models/<name>/<version>, or an
// error naming the rule a name breaks (package claim).
func (j *Job) ModelPath() (string, error) { return claim.ModelPath(j.ModelName, j.ModelVersion) }

// Restart policies a job's replicas take (Job.RestartPolicy).
const (
	RestartNever     = "Never"
	RestartOnFailure = "OnFailure"
)

// TrainerArgs are gangboost-train's arguments with the claim at root (where a replica sees it).
// The data paths and the model folder are joined under root only when they stay inside it.
func (j *Job) TrainerArgs(root string) ([]string, error) {
	var args []string
	for _, d := range []struct{ flag, input, path string }{{"--train", "train_data", j.Data.Train}, {"--eval", "eval_data", j.Data.Eval}} {
		if d.path == "" {
			continue
		}
		if dataset.IsObjectURI(d.path) {
			args = append(args, d.flag, d.path)
			continue
		}
		p, err := onClaim(root, d.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.input, err)
		}
		args = append(args, d.flag, p)
	}
	if j.Data.Schema != "" {
		if dataset.IsObjectURI(j.Data.Schema) {
			return nil, fmt.Errorf("data_schema %s: the trainer reads the schema from the claim; give its path there (prepare-data's schema_path)", j.Data.Schema)
		}
		p, err := onClaim(root, j.Data.Schema)
		if err != nil {
			return nil, fmt.Errorf("data_schema: %w", err)
		}
		args = append(args, "--data-schema", p)
	}
	if j.Data.Dataset != "" {
		args = append(args, "--dataset", j.Data.Dataset)
	}
	if o := j.Data.ObjectStore; o.Endpoint != "" || o.Region != "" || o.PathStyle {
		if o.Endpoint != "" {
			args = append(args, "--s3-endpoint", o.Endpoint)
		}
		if o.Region != "" {
			args = append(args, "--s3-region", o.Region)
		}
		if o.PathStyle {
			args = append(args, "--s3-path-style")
		}
	}
	args = append(args, j.TrainerFlags...)
	if j.Resources.GPUs > 0 {
		// The trainer refuses GPUs its libxgboost cannot use (launch knows only its own
		// image's build).
		args = append(args, "--gpus", strconv.FormatInt(j.Resources.GPUs, 10))
	}
	dir, err := j.modelDir(root)
	if err != nil {
		return nil, err
	}
	// The checkpoints of the model version: a restarted gang (or a retried step's new job)
	// resumes from them.
	ckRel, err := claim.CheckpointPath(j.ModelName, j.ModelVersion)
	if err != nil {
		return nil, err
	}
	ckDir, err := claim.Join(root, ckRel)
	if err != nil {
		return nil, err
	}
	args = append(args, "--checkpoint-dir", filepath.ToSlash(ckDir), "--model-dir", dir)
	if j.Name != "" {
		args = append(args, "--producer", j.Name)
	}
	if j.Overwrite {
		args = append(args, "--overwrite")
	}
	return args, nil
}

// modelDir is the trainer's --model-dir: the version's folder on the claim seen at root, or its
// object store URI.
func (j *Job) modelDir(root string) (string, error) {
	if j.ModelStore != "" {
		return modelobjects.VersionURI(j.ModelStore, j.ModelName, j.ModelVersion)
	}
	rel, err := j.ModelPath()
	if err != nil {
		return "", err
	}
	dir, err := claim.Join(root, rel)
	return filepath.ToSlash(dir), err
}

// ModelURI is the model folder as KServe's storageUri: pvc://<claim>/models/<model>/<version>,
// or s3://<bucket>/<prefix>/<model>/<version>/ with a ModelStore.
func (j *Job) ModelURI() (string, error) {
	if j.ModelStore != "" {
		return modelobjects.VersionURI(j.ModelStore, j.ModelName, j.ModelVersion)
	}
	u, err := claim.ModelURI(j.Claim, j.ModelName, j.ModelVersion)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// modelObjects is the object store folder of the version (ModelStore set).
func (j *Job) modelObjects() (*modelobjects.Folder, error) {
	uri, err := j.ModelURI()
	if err != nil {
		return nil, err
	}
	return modelobjects.Open(uri, j.Data.ObjectStore.Config, "launch "+j.Name)
}

// UsesObjectStore reports whether the trainer reaches an object store: its data or its model
// store is there.
func (j *Job) UsesObjectStore() bool {
	return j.ModelStore != "" || objectstore.IsURI(j.Data.Train) || objectstore.IsURI(j.Data.Eval)
}

// ErrNoStoreCredentials is CheckModelVersion's and ReadModelMetadata's answer when the model goes
// to an object store that only the trainer pods have credentials for (object_store_secret), not
// this step: the trainer then checks the version before it reads any data.
var ErrNoStoreCredentials = errors.New("this step has no object store credentials (AWS_ACCESS_KEY_ID): only the trainer pods get object_store_secret")

// CheckModelVersion refuses a model version that exists (on the claim, seen at localClaim, or in
// the object store) and that this job did not write, unless Overwrite: a published version may be
// serving, and a re-run would otherwise replace it under the running predictor. The job's own
// earlier output (a retried step) is not refused.
func (j *Job) CheckModelVersion(ctx context.Context, localClaim string) error {
	if j.Overwrite {
		return nil
	}
	var exists *modeldir.ExistsError
	var err error
	where := "on claim " + j.Claim
	if j.ModelStore != "" {
		where = "in " + j.ModelStore
		if j.Data.ObjectStore.Secret != "" && !j.Data.ObjectStore.CanSign() {
			return ErrNoStoreCredentials
		}
		f, ferr := j.modelObjects()
		if ferr != nil {
			return ferr
		}
		_, err = f.CheckNew(ctx, j.Name)
	} else {
		rel, perr := j.ModelPath()
		if perr != nil {
			return perr
		}
		dir, jerr := claim.Join(localClaim, rel)
		if jerr != nil {
			return jerr
		}
		_, err = modeldir.CheckNew(dir, j.Name)
	}
	if errors.As(err, &exists) {
		by := ""
		if exists.Producer != "" {
			by = " by job " + exists.Producer
		}
		return fmt.Errorf("model version %s/%s exists %s (written%s): a published version is never replaced, so no job was created; leave model_version empty for a new version per run (run-<run id>), give another model_version, or set overwrite=true to replace it and roll out whatever serves it",
			j.ModelName, j.ModelVersion, where, by)
	}
	return err
}

// ReadModelMetadata reads the finished job's metadata.json, from the claim (seen at localClaim)
// or the object store.
func (j *Job) ReadModelMetadata(ctx context.Context, localClaim string) (*modeldir.Metadata, error) {
	if j.ModelStore != "" {
		if j.Data.ObjectStore.Secret != "" && !j.Data.ObjectStore.CanSign() {
			return nil, ErrNoStoreCredentials
		}
		f, err := j.modelObjects()
		if err != nil {
			return nil, err
		}
		return f.ReadMetadata(ctx)
	}
	rel, err := j.ModelPath()
	if err != nil {
		return nil, err
	}
	dir, err := claim.Join(localClaim, rel)
	if err != nil {
		return nil, err
	}
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		return nil, fmt.Errorf("job %s succeeded but its model folder %s has no readable metadata (is the claim %s mounted at %s?): %w", j.Name, dir, j.Claim, localClaim, err)
	}
	return md, nil
}

// DefaultModelVersion is the model version of a run that names none: "run-" and the first 8
// letters and digits of its run id, lower case. Every attempt of the run's step gets the same
// (a retry resumes its own version), every run another.
func DefaultModelVersion(runID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(runID) {
		if b.Len() == 8 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "run-" + b.String()
}

// onClaim places a claim-relative path under root; an absolute path already under root stays (as
// a claim-relative path: "/mnt/pvc/../x" does not).
func onClaim(root, p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		p = rest
	} else {
		p = strings.TrimPrefix(p, "/")
	}
	dir, err := claim.Join(root, p)
	return filepath.ToSlash(dir), err
}

// Validate checks what every backend needs.
func (j *Job) Validate() error {
	var errs []error
	if j.Name == "" {
		errs = append(errs, errors.New("job name is empty"))
	}
	if j.Identity.RunID == "" || j.Identity.TaskName == "" {
		errs = append(errs, fmt.Errorf("run_id %q and task_name %q must both be set (the pipeline passes {{$.pipeline_job_uuid}} and {{$.pipeline_task_name}})", j.Identity.RunID, j.Identity.TaskName))
	}
	if j.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers = %d, want >= 0", j.Workers))
	}
	if j.Gang.MinAvailable < 0 || j.Gang.MinAvailable > j.Replicas() {
		errs = append(errs, fmt.Errorf("min_available = %d, want 0 (all) up to %d replicas", j.Gang.MinAvailable, j.Replicas()))
	}
	if j.Data.Train == "" && j.Data.Dataset == "" {
		errs = append(errs, errors.New("no training data: set train_data (a path on the claim or an s3:// URI), the train_dataset artifact, or dataset (e.g. iris)"))
	}
	// The local backend runs the trainer with its own folder as the claim; the paths are checked
	// under a stand-in root then.
	root := j.MountPath
	if root == "" {
		root = "/claim"
	}
	if !path.IsAbs(root) || path.Clean(root) != root || root == "/" {
		errs = append(errs, fmt.Errorf("pvc_mount_path %q: want a clean absolute folder other than /, e.g. /mnt/pvc", j.MountPath))
	} else if args, err := j.TrainerArgs(root); err != nil {
		errs = append(errs, err) // names breaking the claim's rules, data paths leaving it
	} else if f, err := trainflags.Parse(args); err != nil {
		// The trainer's own flag checks, before a gang is scheduled to fail them.
		errs = append(errs, err)
	} else {
		errs = append(errs, j.checkGPU(f.Params))
	}
	errs = append(errs, claim.CheckName(j.Claim))
	for _, id := range []struct {
		input string
		v     *int64
	}{{"fs_group", j.Security.FSGroup}, {"run_as_user", j.Security.RunAsUser}, {"run_as_group", j.Security.RunAsGroup}} {
		if id.v != nil && *id.v < 0 {
			errs = append(errs, fmt.Errorf("%s = %d, want an id >= 0 (or leave it unset)", id.input, *id.v))
		}
	}
	switch j.CleanPodPolicy {
	case "", "All", "Running", "None":
	default:
		errs = append(errs, fmt.Errorf("clean_pod_policy = %q, want All, Running or None", j.CleanPodPolicy))
	}
	switch j.RestartPolicy {
	case "", RestartNever, RestartOnFailure:
	case "ExitCode", "Always":
		// ExitCode restarts only replicas killed by a signal (exit code 128 and above); the other
		// ranks of a gang that lost one exit 3, which fails the job. Always restarts a finished
		// Master too, and the job never completes.
		errs = append(errs, fmt.Errorf("restart_policy = %q: a gang that lost a rank restarts only with OnFailure (with ExitCode the surviving ranks' exit code 3 fails the job; with Always it never completes); want Never or OnFailure", j.RestartPolicy))
	default:
		errs = append(errs, fmt.Errorf("restart_policy = %q, want Never or OnFailure", j.RestartPolicy))
	}
	return errors.Join(errs...)
}

// TrainerBuild is what a trainer image's libxgboost was built with: gangboost-train --build-info
// (XGBuildInfo).
type TrainerBuild struct {
	LibXGBoost string // its version, e.g. 3.0.0
	CUDA       bool   // USE_CUDA
}

// checkGPU refuses what a CPU-only libxgboost cannot do, before the job exists: GPUs per replica
// (the gang would hold them and train on the CPU) and device=cuda or tree_method=gpu_hist
// (libxgboost would fail inside the pods once the gang was scheduled).
func (j *Job) checkGPU(p trainflags.Params) error {
	if j.Build == nil || j.Build.CUDA {
		return nil
	}
	cpuOnly := fmt.Sprintf("trainer image %s links libxgboost %s built without CUDA (gangboost-train --build-info: USE_CUDA false)", j.Image, j.Build.LibXGBoost)
	fix := "set image to a gangboost build whose libxgboost has CUDA to train on GPUs"
	if j.Resources.GPUs > 0 {
		return fmt.Errorf("gpus = %d: %s, so every replica would hold %d GPU(s) and train on the CPU; set gpus 0, or %s", j.Resources.GPUs, cpuOnly, j.Resources.GPUs, fix)
	}
	if s := p.UsesGPU(); s != "" {
		return fmt.Errorf("%s: %s; train on the CPU (device cpu, tree_method hist), or %s", s, cpuOnly, fix)
	}
	return nil
}

// Started tells how a job came to be: created now, or adopted from an earlier attempt of the step.
type Started struct {
	Adopted bool
	// Created is when the job was created; the gang's deadline counts from it.
	Created time.Time
	// EndsWithStep is set by a backend whose jobs cannot outlive the step's process (a local
	// gang): when the step is stopped, the launcher stops the job rather than leave it for a
	// retry to adopt. A Kubernetes job keeps running.
	EndsWithStep bool
}

// Progress is one observation of a running job.
type Progress struct {
	// Line is a progress line for the step's log ("" for none).
	Line string
	// Waiting says why the gang waits to be placed ("" when it does not).
	Waiting string
	// GangStarted is set once the gang is placed (its minimum of pods bound, or the job running).
	GangStarted bool
}

// Backend runs jobs. Watch returns nil when the job succeeded and a *FailedError when it failed.
type Backend interface {
	Start(ctx context.Context, job *Job) (Started, error)
	Watch(ctx context.Context, job *Job, progress func(Progress)) error
	Delete(ctx context.Context, job *Job) error
}

// FailedError is a job that failed: the job's reason and what its failing pods said.
type FailedError struct {
	Job    string
	Reason string
	// Pods describe the failing pods: reason, exit code, message, log tail.
	Pods []string
}

func (e *FailedError) Error() string {
	msg := fmt.Sprintf("job %s failed: %s", e.Job, e.Reason)
	for _, p := range e.Pods {
		msg += "\n  " + strings.ReplaceAll(p, "\n", "\n    ")
	}
	return msg
}

// GangTimeoutError is a gang that was not placed before its deadline; the job was deleted.
type GangTimeoutError struct {
	Job     string
	Timeout time.Duration
	Waiting string
}

func (e *GangTimeoutError) Error() string {
	why := e.Waiting
	if why == "" {
		why = "no reason reported by the scheduler"
	}
	return fmt.Sprintf("job %s: gang not scheduled within %s (schedule_timeout_seconds): %s; the job was deleted", e.Job, e.Timeout, why)
}

// Launcher starts a job on a Backend and follows it to the end.
type Launcher struct {
	Backend Backend
	// Log receives progress lines.
	Log io.Writer
}

// Result is a job that succeeded.
type Result struct {
	Job     string
	Adopted bool
}

// Run creates or adopts the job and waits for it. A gang not placed by Gang.ScheduleTimeout after
// the job's creation is deleted and fails with the reason it waited.
func (l *Launcher) Run(ctx context.Context, job *Job) (*Result, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	st, err := l.Backend.Start(ctx, job)
	if err != nil {
		return nil, err
	}
	if st.Adopted {
		l.printf("adopted job %s/%s of %s (created %s)", job.Namespace, job.Name, job.Identity, st.Created.UTC().Format(time.RFC3339))
	} else {
		l.printf("created job %s/%s: Master + %d Worker(s), gang of %d in queue %q", job.Namespace, job.Name, job.Workers, job.MinAvailable(), job.Gang.Queue)
	}

	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		started bool
		waiting string
	)
	errc := make(chan error, 1)
	go func() {
		errc <- l.Backend.Watch(watchCtx, job, func(p Progress) {
			mu.Lock()
			if p.GangStarted {
				started = true
			}
			if p.Waiting != "" {
				waiting = p.Waiting
			}
			mu.Unlock()
			if p.Line != "" {
				l.printf("%s", p.Line)
			}
		})
	}()
	var deadline <-chan time.Time
	if job.Gang.ScheduleTimeout > 0 {
		t := time.NewTimer(time.Until(st.Created.Add(job.Gang.ScheduleTimeout)))
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case err := <-errc:
			if err != nil && ctx.Err() != nil {
				if st.EndsWithStep {
					// The step's end would kill the gang anyway; stopping it here gives its
					// replicas their grace period.
					delCtx, delCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
					derr := l.Backend.Delete(delCtx, job)
					delCancel()
					if derr != nil {
						return nil, fmt.Errorf("stopped while following job %s/%s, whose replicas end with the step (stopping them: %v): %w", job.Namespace, job.Name, derr, ctx.Err())
					}
					return nil, fmt.Errorf("stopped while following job %s/%s; its replicas are stopped with the step (a local job cannot be adopted: a retry starts it anew): %w", job.Namespace, job.Name, ctx.Err())
				}
				return nil, fmt.Errorf("stopped while following job %s/%s; it keeps running and a retry of the step adopts it: %w", job.Namespace, job.Name, ctx.Err())
			}
			if err != nil {
				return nil, err
			}
			return &Result{Job: job.Name, Adopted: st.Adopted}, nil
		case <-deadline:
			mu.Lock()
			placed, why := started, waiting
			mu.Unlock()
			if placed {
				deadline = nil
				continue
			}
			cancel()
			<-errc
			// The caller's context may be ending too; the deletion must still happen.
			delCtx, delCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			derr := l.Backend.Delete(delCtx, job)
			delCancel()
			terr := &GangTimeoutError{Job: job.Name, Timeout: job.Gang.ScheduleTimeout, Waiting: why}
			if derr != nil {
				return nil, fmt.Errorf("%w (deleting it failed: %v)", terr, derr)
			}
			return nil, terr
		}
	}
}

func (l *Launcher) printf(format string, args ...any) {
	if l.Log == nil {
		return
	}
	fmt.Fprintf(l.Log, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
}
