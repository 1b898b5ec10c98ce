package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/training/trainflags"
	"github.com/gangboost/gangboost/test/s3server"
	"github.com/gangboost/gangboost/test/testbin"
)

func executor(t *testing.T, params map[string]any, dir string) *kfp.Executor {
	t.Helper()
	return executorWithArtifacts(t, params, nil, dir)
}

// executorWithArtifacts is executor with input artifacts, by name and URI.
func executorWithArtifacts(t *testing.T, params map[string]any, artifacts map[string]string, dir string) *kfp.Executor {
	t.Helper()
	inputs := map[string]any{"parameterValues": params}
	if len(artifacts) > 0 {
		arts := map[string]any{}
		for name, uri := range artifacts {
			arts[name] = map[string]any{"artifacts": []any{map[string]any{"uri": uri}}}
		}
		inputs["artifacts"] = arts
	}
	in := map[string]any{
		"inputs": inputs,
		"outputs": map[string]any{
			"parameters": map[string]any{
				OutputModelURI: map[string]any{"outputFile": filepath.Join(dir, "model_uri")},
				OutputJobName:  map[string]any{"outputFile": filepath.Join(dir, "job_name")},
			},
			"artifacts": map[string]any{
				OutputModel:         map[string]any{"artifacts": []any{map[string]any{"uri": "minio://b/model"}}},
				OutputMetrics:       map[string]any{"artifacts": []any{map[string]any{"uri": "minio://b/metrics"}}},
				OutputLearningCurve: map[string]any{"artifacts": []any{map[string]any{"uri": "file://" + filepath.Join(dir, "learning_curve")}}},
			},
			"outputFile": filepath.Join(dir, "executor_output.json"),
		},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kfp.ParseExecutorInput(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestJobFromExecutor(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"run_id": "r1", "task_name": "train", "model_name": "iris", "pvc_name": "models",
			"train_data": "datasets/iris/train.csv", "objective": "multi:softprob", "num_round": 20, "eta": "",
			"xgb_params": map[string]any{"max_bin": 64, "grow_policy": "lossguide"}, "workers": 2, "gpus": 1,
			"ttl_seconds_after_finished": -1, "backoff_limit": 0}
	}
	j, local, err := JobFromExecutor(executor(t, base(), t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != JobName(Identity{"r1", "train"}) || j.Namespace != "ml" || j.Workers != 2 || j.Resources.GPUs != 1 || local != "/mnt/pvc" {
		t.Errorf("job = %+v, local %s", j, local)
	}
	if j.API != APIXGBoostJob || j.TrainingRuntime != DefaultTrainingRuntime {
		t.Errorf("job API %q on %q, want %s by default", j.API, j.TrainingRuntime, APIXGBoostJob)
	}
	if j.TTLSecondsAfterFinished != nil || j.BackoffLimit == nil || *j.BackoffLimit != 0 {
		t.Errorf("run policy: ttl %v backoff %v", j.TTLSecondsAfterFinished, j.BackoffLimit)
	}
	if sc := j.Security; sc.FSGroup == nil || *sc.FSGroup != 65532 || sc.RunAsUser != nil || sc.RunAsGroup != nil {
		t.Errorf("default security: %+v, want fsGroup 65532 only", sc)
	}
	// Without the input, a finished job goes after a day.
	noTTL := base()
	delete(noTTL, "ttl_seconds_after_finished")
	if j3, _, err := JobFromExecutor(executor(t, noTTL, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"}); err != nil {
		t.Error(err)
	} else if j3.TTLSecondsAfterFinished == nil || *j3.TTLSecondsAfterFinished != DefaultJobTTLSeconds {
		t.Errorf("default ttl %v, want %d", j3.TTLSecondsAfterFinished, DefaultJobTTLSeconds)
	}
	p := base()
	p["fs_group"], p["run_as_user"], p["run_as_group"] = -1, 1000, 2000
	if j2, _, err := JobFromExecutor(executor(t, p, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"}); err != nil {
		t.Error(err)
	} else if sc := j2.Security; sc.FSGroup != nil || sc.RunAsUser == nil || *sc.RunAsUser != 1000 || sc.RunAsGroup == nil || *sc.RunAsGroup != 2000 {
		t.Errorf("security from inputs: %+v, want no fsGroup, uid 1000, gid 2000", sc)
	}
	args, err := j.TrainerArgs("/mnt/pvc")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	want := "--train /mnt/pvc/datasets/iris/train.csv --objective multi:softprob --num-round 20 --param grow_policy=lossguide --param max_bin=64 --gpus 1 --checkpoint-dir /mnt/pvc/checkpoints/iris/run-r1 --model-dir /mnt/pvc/models/iris/run-r1 --producer " + j.Name
	if got != want {
		t.Errorf("trainer args = %q\nwant %q", got, want)
	}

	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"unknown input", map[string]any{"num_rounds": 3}, `unknown input parameter "num_rounds"`},
		{"not an integer", map[string]any{"workers": 1.5}, `"workers": want an integer`},
		{"no run id", map[string]any{"run_id": ""}, "pipeline_job_uuid"},
		{"bad port", map[string]any{"master_port": 70000}, "master_port"},
		{"model_version ..", map[string]any{"model_version": ".."}, `model_version ".."`},
		{"model_name ..", map[string]any{"model_name": ".."}, `model_name ".."`},
		{"claim with a newline", map[string]any{"pvc_name": "models\nx"}, "pvc_name"},
		{"num_round beyond the bound", map[string]any{"num_round": 400000}, "num_round 400000: want at most 100000"},
		{"eta not a number", map[string]any{"eta": "fast"}, `invalid value "fast" for flag -eta`},
		{"bad xgb_params key", map[string]any{"xgb_params": map[string]any{"": 1}}, "needs a name"},
		// int32(4294967296) is 0: the job would run with no Workers and report success.
		{"workers beyond int32", map[string]any{"workers": 4294967296}, `input parameter "workers": want an integer from 0 to 2147483647, got 4294967296`},
		{"fs_group below -1", map[string]any{"fs_group": -2}, `input parameter "fs_group": want an integer from -1 to 4294967295`},
		{"min_available beyond int32", map[string]any{"min_available": "4294967297"}, `input parameter "min_available": want an integer from 0 to 2147483647, got "4294967297"`},
		{"unknown job_api", map[string]any{"job_api": "pytorchjob"}, `job_api "pytorchjob": want xgboostjob (Training Operator v1 XGBoostJob) or trainjob`},
		{"several GPUs per TrainJob node", map[string]any{"job_api": "trainjob", "gpus": 2}, "gpus 2 with job_api trainjob: Trainer v2 would expect 2 XGBoost workers per node and gangboost-train runs one"},
		{"partial gang as a TrainJob", map[string]any{"job_api": "trainjob", "min_available": 2}, "min_available 2 with job_api trainjob: Trainer v2's Volcano PodGroup always needs all 3 pods"},
		{"misspelt toleration field", map[string]any{"tolerations": []any{map[string]any{"keys": "nvidia.com/gpu"}}}, `input parameter "tolerations"`},
		{"node selector not strings", map[string]any{"node_selector": map[string]any{"gpu": 1}}, `input parameter "node_selector"`},
		{"misspelt affinity field", map[string]any{"affinity": map[string]any{"nodeAfinity": map[string]any{}}}, `unknown field "nodeAfinity"`},
	} {
		p := base()
		for k, v := range tc.set {
			p[k] = v
		}
		_, _, err := JobFromExecutor(executor(t, p, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The placement inputs arrive as KFP passes them (a list and structs) and become the pod spec's own
// types.
func TestPlacementInputs(t *testing.T) {
	p := map[string]any{"run_id": "r1", "task_name": "train", "model_name": "iris", "pvc_name": "models", "dataset": "iris",
		"tolerations":   []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"node_selector": map[string]any{"nvidia.com/gpu.present": "true"},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"gpu"}}}}}}}},
	}
	j, _, err := JobFromExecutor(executor(t, p, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"})
	if err != nil {
		t.Fatal(err)
	}
	pl := j.Placement
	if len(pl.Tolerations) != 1 || pl.Tolerations[0].Key != "nvidia.com/gpu" || pl.Tolerations[0].Operator != "Exists" || pl.Tolerations[0].Effect != "NoSchedule" ||
		pl.NodeSelector["nvidia.com/gpu.present"] != "true" || pl.Affinity == nil ||
		pl.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "gpu" {
		t.Fatalf("placement %+v", pl)
	}
	// The defaults (an empty list and empty structs) place nothing.
	delete(p, "tolerations")
	p["node_selector"], p["affinity"] = map[string]any{}, map[string]any{}
	if j, _, err = JobFromExecutor(executor(t, p, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"}); err != nil {
		t.Fatal(err)
	}
	if j.Placement.Tolerations != nil || len(j.Placement.NodeSelector) != 0 || j.Placement.Affinity != nil {
		t.Fatalf("defaults gave placement %+v", j.Placement)
	}
}

// GPU requests the trainer image's libxgboost cannot serve are refused by JobFromExecutor, before
// any job exists, naming the image and the fix: the real CPU-only build of make build's
// gangboost-train (Debian 13's libxgboost, USE_CUDA false) for the default image. Another
// image's build is not known here: its job passes, and its trainer gets --gpus to check its own
// build when the pods start.
func TestGPURequestsNeedACUDABuild(t *testing.T) {
	bin := testbin.Built(t, "./components/xgboost-trainer")
	build, err := TrainerBuildOf(bin)
	if err != nil {
		t.Fatal(err)
	}
	if build.CUDA || build.LibXGBoost != "3.0.0" {
		t.Fatalf("gangboost-train --build-info: %+v, want libxgboost 3.0.0 without CUDA", build)
	}
	d := Defaults{Namespace: "ml", Image: "ghcr.io/gangboost/gangboost:0.1.0", Build: build}
	base := func() map[string]any {
		return map[string]any{"run_id": "r1", "task_name": "train", "model_name": "iris", "pvc_name": "models", "dataset": "iris"}
	}
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"gpus", map[string]any{"gpus": 1}, "gpus = 1: trainer image ghcr.io/gangboost/gangboost:0.1.0 links libxgboost 3.0.0 built without CUDA (gangboost-train --build-info: USE_CUDA false), so every replica would hold 1 GPU(s) and train on the CPU; set gpus 0, or set image to a gangboost build whose libxgboost has CUDA"},
		{"device", map[string]any{"xgb_params": map[string]any{"device": "cuda"}}, "device=cuda: trainer image ghcr.io/gangboost/gangboost:0.1.0 links libxgboost 3.0.0 built without CUDA"},
		{"gpu_hist", map[string]any{"tree_method": "gpu_hist"}, "tree_method=gpu_hist: trainer image ghcr.io/gangboost/gangboost:0.1.0 links libxgboost 3.0.0 built without CUDA"},
	} {
		p := base()
		for k, v := range tc.set {
			p[k] = v
		}
		_, _, err := JobFromExecutor(executor(t, p, t.TempDir()), d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		// Another image's build is not known here: the request is the user's to make.
		p["image"] = "registry.example.com/gangboost-cuda:1"
		j, _, err := JobFromExecutor(executor(t, p, t.TempDir()), d)
		if err != nil {
			t.Errorf("%s with image %s: %v", tc.name, p["image"], err)
			continue
		}
		args, err := j.TrainerArgs("/mnt/pvc")
		if err != nil {
			t.Fatal(err)
		}
		if gpus := slices.Index(args, "--gpus"); (tc.name == "gpus") != (gpus >= 0 && args[gpus+1] == "1") {
			t.Errorf("%s: trainer args %v: want --gpus 1 exactly when gpus is 1", tc.name, args)
		}
	}
	if _, _, err := JobFromExecutor(executor(t, base(), t.TempDir()), d); err != nil {
		t.Errorf("a CPU job with the CPU-only image: %v", err)
	}
}

// The trainer's tunable flags are the component's inputs of the same names, with the trainer's
// defaults: the launcher passes each input to the flag gangboost-train defines.
func TestInputsAreTheTrainerFlags(t *testing.T) {
	inputs := map[string]kfp.Input{}
	for _, in := range Inputs {
		inputs[in.Name] = in
	}
	_, fs := trainflags.New("gangboost-train")
	for _, flag := range trainflags.Tunables {
		in, ok := inputs[trainflags.InputName(flag)]
		if !ok {
			t.Errorf("the trainer's flag --%s has no input %s", flag, trainflags.InputName(flag))
			continue
		}
		def := fmt.Sprint(in.Default)
		if in.Default == nil || def == "" {
			continue // empty: the trainer's default
		}
		if want := fs.Lookup(flag).DefValue; def != want {
			t.Errorf("input %s defaults to %q, the trainer's --%s to %q", in.Name, def, flag, want)
		}
	}
}

func TestWriteOutputs(t *testing.T) {
	claim, out := t.TempDir(), t.TempDir()
	e := executor(t, map[string]any{}, out)
	j := &Job{Name: "train-abc", Claim: "models", ModelName: "iris", ModelVersion: "v1"}
	if err := WriteOutputs(context.Background(), e, j, claim); err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Errorf("WriteOutputs without a model folder: %v", err)
	}
	dir := filepath.Join(claim, "models", "iris", "v1")
	md := &modeldir.Metadata{Objective: "multi:softprob", Rounds: 3, Classes: []string{"a", "b", "c"}, WorldSize: 2,
		Metrics: map[string][]float64{"eval-mlogloss": {0.9, 0.5, 0.3}, "train-mlogloss": {0.8, 0.4, 0.2}}}
	if err := modeldir.Publish(dir, modeldir.ModelFileName(modeldir.FormatJSON), []byte(`{"learner":{}}`), md, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteOutputs(context.Background(), e, j, claim); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "executor_output.json"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := kfp.ParseExecutorOutput(b)
	if err != nil {
		t.Fatal(err)
	}
	if uri := o.GetArtifacts()[OutputModel].GetArtifacts()[0].GetUri(); uri != "pvc://models/models/iris/v1" {
		t.Errorf("model uri = %s", uri)
	}
	m := o.GetArtifacts()[OutputMetrics].GetArtifacts()[0].GetMetadata().GetFields()
	if m["eval-mlogloss"].GetNumberValue() != 0.3 || m["train-mlogloss"].GetNumberValue() != 0.2 {
		t.Errorf("metrics = %v, want the final values", m)
	}
	page, err := os.ReadFile(filepath.Join(out, "learning_curve"))
	if err != nil || strings.Count(string(page), "<svg") != 1 || strings.Count(string(page), "<polyline") != 2 {
		t.Errorf("learning_curve: %v\n%s", err, page)
	}
	if o.GetParameterValues()[OutputJobName].GetStringValue() != "train-abc" {
		t.Errorf("job_name = %v", o.GetParameterValues()[OutputJobName])
	}
}

func TestObjectStoreData(t *testing.T) {
	params := func() map[string]any {
		return map[string]any{"run_id": "r1", "task_name": "train", "model_name": "higgs", "label": "label", "pvc_name": "models",
			"object_store_path_style": "true", "object_store_secret": "mlpipeline-minio-artifact"}
	}
	d := Defaults{Namespace: "ml", Image: "gangboost:1"}
	// A KFP Dataset artifact in KFP's MinIO is the training data, passed as it is.
	j, _, err := JobFromExecutor(executorWithArtifacts(t, params(), map[string]string{"train_dataset": "minio://mlpipeline/v2/artifacts/p/r/prep/train"}, t.TempDir()), d)
	if err != nil {
		t.Fatal(err)
	}
	args, err := j.TrainerArgs("/mnt/pvc")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(args, " "), "--train minio://mlpipeline/v2/artifacts/p/r/prep/train --s3-path-style --label label --checkpoint-dir /mnt/pvc/checkpoints/higgs/run-r1 --model-dir /mnt/pvc/models/higgs/run-r1 --producer "+j.Name; got != want {
		t.Errorf("trainer args = %q\nwant %q", got, want)
	}
	if o := j.Data.ObjectStore; o.Secret != "mlpipeline-minio-artifact" || o.AccessKeyKey != "accesskey" || o.SecretKeyKey != "secretkey" {
		t.Errorf("object store = %+v, want KFP's secret and its keys", o)
	}
	// train_data may be an s3:// prefix of part files; the endpoint goes to the trainer.
	p := params()
	p["train_data"], p["object_store_endpoint"] = "s3://data/higgs/", "http://minio.storage:9000"
	if j, _, err = JobFromExecutor(executor(t, p, t.TempDir()), d); err != nil {
		t.Fatal(err)
	}
	args, _ = j.TrainerArgs("/mnt/pvc")
	if got := strings.Join(args, " "); !strings.HasPrefix(got, "--train s3://data/higgs/ --s3-endpoint http://minio.storage:9000 --s3-path-style") {
		t.Errorf("trainer args = %q", got)
	}
	// An artifact elsewhere than in an object store, or two training inputs, are refused.
	for uri, want := range map[string]string{
		"gs://bucket/data":            "reads artifacts from an object store",
		"minio://mlpipeline/v2/x/y/z": "both given",
	} {
		p := params()
		if strings.HasPrefix(uri, "minio") {
			p["train_data"] = "datasets/x.csv"
		}
		_, _, err := JobFromExecutor(executorWithArtifacts(t, p, map[string]string{"train_dataset": uri}, t.TempDir()), d)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", uri, err, want)
		}
	}
}

// The default version is new for every run and the same for every attempt of one; a version that
// exists is refused before a job is created unless this job wrote it, or with overwrite.
func TestModelVersionNeverReplaced(t *testing.T) {
	if a, b := DefaultModelVersion("0B7C3F8E-6b1e-4a51"), DefaultModelVersion("0b7c3f8e-6b1e-4a51"); a != "run-0b7c3f8e" || a != b {
		t.Errorf("DefaultModelVersion = %q and %q, want run-0b7c3f8e for both", a, b)
	}
	if a, b := DefaultModelVersion("run-one"), DefaultModelVersion("run-two"); a == b {
		t.Errorf("two runs share the default version %q", a)
	}
	localClaim := t.TempDir()
	params := func(extra map[string]any) map[string]any {
		p := map[string]any{"run_id": "8d1f00aa-1", "task_name": "train", "model_name": "iris", "pvc_name": "models", "dataset": "iris"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	job := func(extra map[string]any) *Job {
		t.Helper()
		j, _, err := JobFromExecutor(executor(t, params(extra), t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j := job(nil)
	if j.ModelVersion != "run-8d1f00aa" || j.Overwrite {
		t.Fatalf("defaults: version %q overwrite %v", j.ModelVersion, j.Overwrite)
	}
	if err := j.CheckModelVersion(context.Background(), localClaim); err != nil {
		t.Fatalf("a new version: %v", err)
	}
	// Another run's model at v1.
	v1 := filepath.Join(localClaim, "models", "iris", "v1")
	if err := modeldir.Publish(v1, "model.json", []byte("{}"), &modeldir.Metadata{Producer: "train-0123456789"}, false); err != nil {
		t.Fatal(err)
	}
	err := job(map[string]any{"model_version": "v1"}).CheckModelVersion(context.Background(), localClaim)
	for _, want := range []string{"iris/v1 exists", "claim models", "train-0123456789", "no job was created", "model_version", "overwrite=true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("existing version: %v, want it to say %q", err, want)
		}
	}
	if err := job(map[string]any{"model_version": "v1", "overwrite": "true"}).CheckModelVersion(context.Background(), localClaim); err != nil {
		t.Errorf("overwrite=true: %v", err)
	}
	// The same job's own earlier output: a retried step goes on.
	own := job(map[string]any{"model_version": "v2"})
	if err := modeldir.Publish(filepath.Join(localClaim, "models", "iris", "v2"), "model.json", []byte("{}"), &modeldir.Metadata{Producer: own.Name}, false); err != nil {
		t.Fatal(err)
	}
	if err := own.CheckModelVersion(context.Background(), localClaim); err != nil {
		t.Errorf("the job's own earlier output: %v", err)
	}
	if args, _ := job(map[string]any{"overwrite": "true"}).TrainerArgs("/mnt/pvc"); !slices.Contains(args, "--overwrite") {
		t.Errorf("overwrite=true: trainer args %v lack --overwrite", args)
	}
	if _, _, err := JobFromExecutor(executor(t, params(map[string]any{"overwrite": "yes"}), t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"}); err == nil || !strings.Contains(err.Error(), `overwrite "yes"`) {
		t.Errorf("overwrite=yes: %v", err)
	}
}

// model_store puts the version in an object store: the trainer publishes there, the version is
// checked there before a job is created, and a bad store is refused at once.
func TestModelStore(t *testing.T) {
	srv := s3server.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv.MakeBucket(t, "models")
	base := map[string]any{"run_id": "8d1f00aa-1", "task_name": "train", "model_name": "iris", "pvc_name": "models", "dataset": "iris",
		"model_store": "s3://models/team-a", "object_store_endpoint": srv.Endpoint, "object_store_path_style": "true"}
	job := func(extra map[string]any) (*Job, error) {
		p := maps.Clone(base)
		maps.Copy(p, extra)
		j, _, err := JobFromExecutor(executor(t, p, t.TempDir()), Defaults{Namespace: "ml", Image: "gangboost:1"})
		return j, err
	}
	j, err := job(nil)
	if err != nil {
		t.Fatal(err)
	}
	if uri, err := j.ModelURI(); err != nil || uri != "s3://models/team-a/iris/run-8d1f00aa/" {
		t.Fatalf("ModelURI = %q, %v", uri, err)
	}
	args, _ := j.TrainerArgs("/mnt/pvc")
	if i := slices.Index(args, "--model-dir"); i < 0 || args[i+1] != "s3://models/team-a/iris/run-8d1f00aa/" || !slices.Contains(args, "--s3-path-style") {
		t.Fatalf("trainer args %v: want --model-dir at the version's URI with the store's settings", args)
	}
	ctx := context.Background()
	if err := j.CheckModelVersion(ctx, t.TempDir()); err != nil {
		t.Fatalf("a new version: %v", err)
	}
	f, err := j.modelObjects()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Publish(ctx, "model.json", []byte("{}"), &modeldir.Metadata{Producer: "train-0123456789"}, false); err != nil {
		t.Fatal(err)
	}
	err = j.CheckModelVersion(ctx, t.TempDir())
	for _, want := range []string{"iris/run-8d1f00aa exists in s3://models/team-a", "train-0123456789", "no job was created"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("existing version in the store: %v, want it to say %q", err, want)
		}
	}
	if md, err := j.ReadModelMetadata(ctx, ""); err != nil || md.Producer != "train-0123456789" {
		t.Errorf("ReadModelMetadata: %+v, %v", md, err)
	}
	// Without credentials in the step but with a secret for the pods: the trainer checks.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	j2, _ := job(map[string]any{"object_store_secret": "mlpipeline-minio-artifact"})
	if err := j2.CheckModelVersion(ctx, ""); !errors.Is(err, ErrNoStoreCredentials) {
		t.Errorf("no credentials in the step: %v, want ErrNoStoreCredentials", err)
	}
	for store, want := range map[string]string{
		"minio://models/x": "want s3://",
		"s3://Models":      "bucket",
		"s3://models/../x": "prefix",
	} {
		if _, err := job(map[string]any{"model_store": store}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("model_store %s: %v, want an error containing %q", store, err, want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}
