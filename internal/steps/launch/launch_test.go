package launch

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestJobName(t *testing.T) {
	tests := []struct {
		id   Identity
		want string // pattern
	}{
		{Identity{"4b0c5a34-2f0e-4c55-9a39-0d8a2c1b7e11", "launch-xgboostjob"}, `^launch-xgboostjob-[0-9a-f]{10}$`},
		{Identity{"r", "Train XGBoost (GPU)"}, `^train-xgboost-gpu-[0-9a-f]{10}$`},
		{Identity{"r", "2nd-step"}, `^xgb-2nd-step-[0-9a-f]{10}$`},
		{Identity{"r", "___"}, `^xgb-[0-9a-f]{10}$`},
		{Identity{"r", strings.Repeat("very-long-task-name-", 10)}, `^very-long-task-name-very-long-task-[0-9a-f]{10}$`},
	}
	for _, tc := range tests {
		got := JobName(tc.id)
		if !regexp.MustCompile(tc.want).MatchString(got) || len(got) > maxJobName {
			t.Errorf("JobName(%+v) = %q (%d chars), want %s", tc.id, got, len(got), tc.want)
		}
		if again := JobName(tc.id); again != got {
			t.Errorf("JobName not stable: %q then %q", got, again)
		}
	}
	a := JobName(Identity{"run-a", "train"})
	if b := JobName(Identity{"run-b", "train"}); a == b {
		t.Errorf("two runs share job name %q", a)
	}
}

func TestTrainerArgs(t *testing.T) {
	j := &Job{Data: Data{Train: "datasets/iris/train.csv", Eval: "/mnt/pvc/datasets/iris/test.csv"},
		TrainerFlags: []string{"--objective", "multi:softprob"}, ModelName: "iris", ModelVersion: "v2"}
	args, err := j.TrainerArgs("/mnt/pvc")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	want := "--train /mnt/pvc/datasets/iris/train.csv --eval /mnt/pvc/datasets/iris/test.csv --objective multi:softprob --checkpoint-dir /mnt/pvc/checkpoints/iris/v2 --model-dir /mnt/pvc/models/iris/v2"
	if got != want {
		t.Errorf("TrainerArgs = %q\nwant %q", got, want)
	}
}

func validJob() *Job {
	id := Identity{"run", "task"}
	return &Job{Name: JobName(id), Namespace: "ns", Identity: id, Data: Data{Dataset: "iris"}, Claim: "c", MountPath: "/mnt/pvc",
		ModelName: "iris", ModelVersion: "v1", Gang: Gang{ScheduleTimeout: 300 * time.Millisecond}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Job)
		want   string
	}{
		{"ok", func(*Job) {}, ""},
		{"no run", func(j *Job) { j.Identity.RunID = "" }, "pipeline_job_uuid"},
		{"no data", func(j *Job) { j.Data = Data{} }, "no training data"},
		{"min available", func(j *Job) { j.Gang.MinAvailable = 3 }, "min_available = 3"},
		{"model", func(j *Job) { j.ModelName = "a/b" }, "model_name"},
		{"clean", func(j *Job) { j.CleanPodPolicy = "Some" }, "clean_pod_policy"},
		{"restart on failure", func(j *Job) { j.RestartPolicy = RestartOnFailure }, ""},
		{"restart policy", func(j *Job) { j.RestartPolicy = "Sometimes" }, "restart_policy"},
		// The surviving ranks of a gang exit 3, which ExitCode does not retry.
		{"restart on exit code", func(j *Job) { j.RestartPolicy = "ExitCode" }, "surviving ranks' exit code 3"},
		{"negative checkpoint interval", func(j *Job) { j.TrainerFlags = []string{"--checkpoint-every-rounds", "-1"} }, "--checkpoint-every-rounds -1"},
		// Once published over models/ whole, over every version of the model, at the claim's parent.
		{"version ..", func(j *Job) { j.ModelVersion = ".." }, `model_version ".."`},
		{"version .", func(j *Job) { j.ModelVersion = "." }, `model_version "."`},
		{"name and version ..", func(j *Job) { j.ModelName, j.ModelVersion = "..", ".." }, `model_name ".."`},
		{"version with a newline", func(j *Job) { j.ModelVersion = "v1\nv2" }, "model_version"},
		{"claim with a newline", func(j *Job) { j.Claim = "c\nINFO forged" }, "pvc_name"},
		{"claim with bidi characters", func(j *Job) { j.Claim = "c\u202eslledom" }, "pvc_name"},
		{"no claim", func(j *Job) { j.Claim = "" }, "pvc_name"},
		{"train data leaving the claim", func(j *Job) { j.Data = Data{Train: "../etc/data.csv"} }, "train_data"},
		{"eval data leaving the claim", func(j *Job) { j.Data.Eval = "/mnt/pvc/../x.csv" }, "eval_data"},
		{"mount path not clean", func(j *Job) { j.MountPath = "/mnt/pvc/.." }, "pvc_mount_path"},
		{"too many rounds", func(j *Job) { j.TrainerFlags = []string{"--num-round", "400000"} }, "num_round 400000: want at most 100000"},
		{"eta out of range", func(j *Job) { j.TrainerFlags = []string{"--eta", "-0.1"} }, "eta -0.1"},
		{"not a number", func(j *Job) { j.TrainerFlags = []string{"--max-depth", "deep"} }, `invalid value "deep" for flag -max-depth`},
		{"unknown trainer flag", func(j *Job) { j.TrainerFlags = []string{"--num-rounds", "3"} }, "-num-rounds"},
	}
	for _, tc := range tests {
		j := validJob()
		tc.mutate(j)
		err := j.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// fakeBackend reports a scripted sequence of progress and then blocks or ends.
type fakeBackend struct {
	mu       sync.Mutex
	progress []Progress
	end      error // returned after progress, unless block
	block    bool
	deleted  int
	started  int
	created  time.Time
}

// A job whose names or trainer flags the trainer would refuse is refused before the backend is
// asked to create it: no gang is scheduled only to fail.
func TestRunRefusesBeforeStart(t *testing.T) {
	for _, mutate := range []func(*Job){
		func(j *Job) { j.TrainerFlags = []string{"--num-round", "400000"} },
		func(j *Job) { j.TrainerFlags = []string{"--subsample", "2"} },
		func(j *Job) { j.ModelVersion = ".." },
		func(j *Job) { j.Claim = "gangboost-models\n" },
	} {
		j := validJob()
		mutate(j)
		f := &fakeBackend{created: time.Now()}
		if _, err := (&Launcher{Backend: f}).Run(context.Background(), j); err == nil || f.started != 0 {
			t.Errorf("Run = %v after %d Start calls, want an error and none", err, f.started)
		}
	}
}

func (f *fakeBackend) Start(context.Context, *Job) (Started, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started++
	return Started{Created: f.created}, nil
}
func (f *fakeBackend) Watch(ctx context.Context, _ *Job, progress func(Progress)) error {
	for _, p := range f.progress {
		progress(p)
	}
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.end
}
func (f *fakeBackend) Delete(context.Context, *Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted++
	return nil
}

func TestRunDeadlineDeletes(t *testing.T) {
	why := "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu"
	created := time.Now()
	f := &fakeBackend{created: created, block: true, progress: []Progress{{Line: "gang waiting: " + why, Waiting: why}}}
	var log bytes.Buffer
	// The hang guard ends a run whose deadline never fires; that shows as "stopped while
	// following", not as the gang timeout checked below.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := validJob()
	_, err := (&Launcher{Backend: f, Log: &log}).Run(ctx, job)
	took := time.Since(created)
	var te *GangTimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("Run = %v, want a gang timeout naming %q", err, why)
	}
	if f.deleted != 1 {
		t.Errorf("deleted %d times, want 1", f.deleted)
	}
	// The deadline counts from the job's creation and cannot fire early; how late it fires
	// depends on the machine, so it is only logged.
	if took < job.Gang.ScheduleTimeout {
		t.Errorf("failed %s after the job was created, before the %s deadline", took, job.Gang.ScheduleTimeout)
	}
	t.Logf("failed %s after the job was created, with a %s deadline", took.Round(time.Millisecond), job.Gang.ScheduleTimeout)
	if !strings.Contains(log.String(), why) {
		t.Errorf("log lacks the reason:\n%s", log.String())
	}
}

func TestRunStartedGangOutlivesDeadline(t *testing.T) {
	job := validJob()
	// Seconds for the watch to report the gang placed (a busy machine may start it late).
	job.Gang.ScheduleTimeout = 2 * time.Second
	f := &fakeBackend{created: time.Now(), progress: []Progress{{GangStarted: true}}}
	f.end = nil
	// The watch ends after the deadline: a placed gang is not deleted.
	slow := &slowEnd{fakeBackend: f, after: job.Gang.ScheduleTimeout + 500*time.Millisecond}
	res, err := (&Launcher{Backend: slow}).Run(context.Background(), job)
	if err != nil || res == nil {
		t.Fatalf("Run = %v, %v", res, err)
	}
	if f.deleted != 0 {
		t.Errorf("a placed gang was deleted")
	}
}

type slowEnd struct {
	*fakeBackend
	after time.Duration
}

func (s *slowEnd) Watch(ctx context.Context, j *Job, progress func(Progress)) error {
	for _, p := range s.progress {
		progress(p)
	}
	time.Sleep(s.after)
	return nil
}

func TestRunFailure(t *testing.T) {
	fe := &FailedError{Job: "ns/x", Reason: "JobFailed: 1 Master replica(s) failed", Pods: []string{"pod x-master-0: container xgboost exited 2 (Error)"}}
	f := &fakeBackend{created: time.Now(), end: fe}
	_, err := (&Launcher{Backend: f}).Run(context.Background(), validJob())
	if !errors.As(err, new(*FailedError)) || !strings.Contains(err.Error(), "exited 2") {
		t.Errorf("Run = %v, want the failure with the pod's reason", err)
	}
}

// endsWithStep is a backend whose jobs end with the step's process, as a local gang does.
type endsWithStep struct{ *fakeBackend }

func (e endsWithStep) Start(ctx context.Context, j *Job) (Started, error) {
	st, err := e.fakeBackend.Start(ctx, j)
	st.EndsWithStep = true
	return st, err
}

// TestRunStoppedSaysWhatHappensToTheJob: a stopped step leaves a Kubernetes job running for a
// retry to adopt, and says so; a job that ends with the step is stopped, and that is what it says.
func TestRunStoppedSaysWhatHappensToTheJob(t *testing.T) {
	for _, tc := range []struct {
		name        string
		backend     func(*fakeBackend) Backend
		want        string
		wantDeleted int
	}{
		{"a job that outlives the step", func(f *fakeBackend) Backend { return f }, "it keeps running and a retry of the step adopts it", 0},
		{"a job that ends with the step", func(f *fakeBackend) Backend { return endsWithStep{f} }, "its replicas are stopped with the step (a local job cannot be adopted", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBackend{created: time.Now(), block: true, progress: []Progress{{GangStarted: true}}}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := (&Launcher{Backend: tc.backend(f)}).Run(ctx, validJob())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want %q", err, tc.want)
			}
			if f.deleted != tc.wantDeleted {
				t.Errorf("deleted %d times, want %d", f.deleted, tc.wantDeleted)
			}
		})
	}
}
