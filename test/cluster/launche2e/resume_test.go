package launche2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/test/testbin"
)

// trainerPid is the pid of the trainer process whose rank is rank in the environment variable
// rankVar (the Training Operator's RANK, Trainer v2's DMLC_TASK_ID) and whose command line holds
// marker (its checkpoint folder: the test's claim), or 0. The pod runner maps the operator's
// MASTER_ADDR to loopback, so the job's name is not in the environment.
func trainerPid(marker, rankVar string, rank int) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("gangboost-train")) || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if slices.Contains(vars, rankVar+"="+strconv.Itoa(rank)) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			return pid
		}
	}
	return 0
}

// killAfterCheckpoint kills (SIGKILL, as the OOM killer or a lost node would end it) the trainer
// of rank (in rankVar) once a checkpoint is in ckDir, and sends the newest checkpoint's name then;
// the channel closes without one when nothing was killed within d.
func killAfterCheckpoint(ckDir, rankVar string, rank int, d time.Duration) <-chan string {
	killed := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if m, _ := filepath.Glob(filepath.Join(ckDir, "round-*.ckpt")); len(m) > 0 {
				if pid := trainerPid(ckDir, rankVar, rank); pid > 0 {
					if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
						killed <- filepath.Base(m[len(m)-1])
						return
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(killed)
	}()
	return killed
}

// The resume tests' training: iris, resumeRounds rounds of depth 2 on one thread, a checkpoint
// every resumeCheckpointEvery rounds. The kill lands at the first checkpoint, within a tenth of
// a second, with nine tenths of the rounds still to go (360 rounds, over a second of training
// at about 4 ms a round), so the gang is always interrupted mid-training; more rounds would only
// cost CPU (the two tests' trainers run alone: 28 CPU-s at 1000 rounds; 3000 took ~100 CPU-s of
// make test). The restarted gang then finishes within a second or two, before the step's next
// read of the Master's log: the step still reports where it resumed.
const (
	resumeRounds          = 400
	resumeCheckpointEvery = 40
)

// uninterruptedModel is the model the resume tests' training gives without interruption: a local
// gang of rank 0 and workers more ranks with the same settings (a fifth held out).
func uninterruptedModel(t *testing.T, workers int) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "whole")
	out, err := exec.Command(filepath.Join(testbin.Dir(t), "gangboost-train"), "--local", strconv.Itoa(workers), "--dataset", "iris", "--label", "species",
		"--eval-fraction", "0.2", "--objective", "multi:softprob", "--num-round", strconv.Itoa(resumeRounds), "--max-depth", "2", "--nthread", "1",
		"--model-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("uninterrupted gang: %v\n%s", err, out)
	}
	whole, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	return whole
}

// TestLaunchRestartedGangResumes: with restart_policy OnFailure, the Worker's trainer is killed
// (SIGKILL, as the OOM killer or a lost node would end it) once rank 0 has written a checkpoint.
// The Master's trainer sees the rank lost and exits 3; the kubelet (here the pod runner) restarts
// both containers in place, the operator keeps the job running (2 restarts, below backoff_limit
// 3), and the new gang resumes from the checkpoint. The component reports the restarts and the
// round it resumed at, the model records it, and it is the model an uninterrupted gang trains.
func TestLaunchRestartedGangResumes(t *testing.T) {
	requireTrainer(t)
	e := newEnv(t, "resume")
	runID := uuid.NewString()
	s := e.newStep(runID, "train-iris", map[string]any{
		"model_name": "iris", "workers": 1, "num_round": resumeRounds, "max_depth": "2", "nthread": 1,
		"checkpoint_every_rounds": resumeCheckpointEvery, "restart_policy": "OnFailure", "backoff_limit": 3,
	})
	job := launch.JobName(launch.Identity{RunID: runID, TaskName: "train-iris"})
	ckDir := filepath.Join(e.pvcDir, "checkpoints", "iris", "v1")

	killed := killAfterCheckpoint(ckDir, "RANK", 1, 3*time.Minute)

	r := e.runComponent(s, 4*time.Minute)
	first, ok := <-killed
	if !ok {
		t.Fatal("no checkpoint appeared, or the Worker's trainer was not found to kill")
	}
	if r.exitCode != 0 {
		t.Fatalf("component exited %d, want 0 after the gang's restart", r.exitCode)
	}
	for _, want := range [][]string{{"pod " + job + "-worker-0: trainer restarted (restart 1) after exit code 137"},
		{"pod " + job + "-master-0: trainer restarted (restart 1) after exit code 3"}, {"job Succeeded"}} {
		if _, ok := r.firstLine(want...); !ok {
			t.Errorf("no progress line with %q", want)
		}
	}
	line, ok := r.firstLine("pod " + job + "-master-0 (restart 1): resumed from checkpoint at round ")
	if !ok {
		t.Fatal("the component did not report where the restarted gang resumed")
	}
	k, _ := strconv.Atoi(regexp.MustCompile(`round (\d+)$`).FindStringSubmatch(line.text)[1])
	md, err := modeldir.ReadMetadata(filepath.Join(e.pvcDir, "models", "iris", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if k%resumeCheckpointEvery != 0 || k < resumeCheckpointEvery || !slices.Equal(md.ResumedAt, []int{k}) || md.Rounds != resumeRounds {
		t.Errorf("resumed at round %d (first checkpoint seen %s); metadata resumed_at %v, rounds %d", k, first, md.ResumedAt, md.Rounds)
	}
	model := r.output.GetArtifacts()[launch.OutputModel].GetArtifacts()
	if len(model) != 1 || len(model[0].GetMetadata().GetFields()["resumed_at_rounds"].GetListValue().GetValues()) != 1 {
		t.Errorf("model artifact metadata does not record the resume: %v", model)
	}
	if _, err := os.Stat(ckDir); !os.IsNotExist(err) {
		t.Errorf("checkpoints left after the model was published: %v", err)
	}
	// The same training uninterrupted (a local gang of the same two ranks and settings) gives the
	// same model, byte for byte.
	whole := uninterruptedModel(t, 1)
	resumed, err := os.ReadFile(filepath.Join(e.pvcDir, "models", "iris", "v1", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, resumed) {
		t.Errorf("the resumed job's model (%d bytes) differs from an uninterrupted gang's (%d bytes)", len(resumed), len(whole))
	}
	t.Logf("killed the Worker after %s; the gang resumed at round %d (%s after the start)", first, k, line.at.Sub(r.started).Round(time.Millisecond))
}

// TestLaunchTrainJobRestartedGangResumes: a TrainJob's rank 1 is killed (SIGKILL) once rank 0 has
// written a checkpoint. Its Job fails, the JobSet (manifests/trainer's failurePolicy) recreates
// the whole gang, rank 0 of the new gang resumes from the checkpoint, and the TrainJob completes
// with the model an uninterrupted gang trains.
func TestLaunchTrainJobRestartedGangResumes(t *testing.T) {
	requireTrainer(t)
	e := newTrainJobEnv(t, "tjresume")
	runID := uuid.NewString()
	s := e.newStep(runID, "train-iris", map[string]any{
		"model_name": "iris", "workers": trainJobNodes - 1, "job_api": launch.APITrainJob, "num_round": resumeRounds, "max_depth": "2",
		"nthread": 1, "checkpoint_every_rounds": resumeCheckpointEvery,
	})
	ckDir := filepath.Join(e.pvcDir, "checkpoints", "iris", "v1")
	killed := killAfterCheckpoint(ckDir, "DMLC_TASK_ID", 1, 4*time.Minute)
	r := e.runComponent(s, 6*time.Minute)
	first, ok := <-killed
	if !ok {
		t.Fatal("no checkpoint appeared, or rank 1's trainer was not found to kill")
	}
	if r.exitCode != 0 {
		t.Fatalf("component exited %d, want 0 after the gang's restart", r.exitCode)
	}
	md, err := modeldir.ReadMetadata(filepath.Join(e.pvcDir, "models", "iris", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(md.ResumedAt) != 1 || md.ResumedAt[0]%resumeCheckpointEvery != 0 || md.ResumedAt[0] < resumeCheckpointEvery || md.Rounds != resumeRounds {
		t.Fatalf("metadata resumed_at %v, rounds %d (first checkpoint seen %s): want one resume at a checkpoint", md.ResumedAt, md.Rounds, first)
	}
	whole := uninterruptedModel(t, trainJobNodes-1)
	resumed, err := os.ReadFile(filepath.Join(e.pvcDir, "models", "iris", "v1", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, resumed) {
		t.Errorf("the resumed TrainJob's model (%d bytes) differs from an uninterrupted gang's (%d bytes)", len(resumed), len(whole))
	}
	t.Logf("killed rank 1 after %s; the new gang resumed at round %d", first, md.ResumedAt[0])
}
