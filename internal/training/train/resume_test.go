package train

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/training/checkpoint"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/gangenv"
)

// boostOnce trains on one rank as Run does (one locked OS thread) and returns the model, its
// metadata and the log.
func boostOnce(t *testing.T, p Params, ck Checkpointing, data *dataset.Matrix) ([]byte, *Result, string) {
	t.Helper()
	var log bytes.Buffer
	job := Job{Params: p, ModelFormat: "json", LogEvery: 1, Checkpoint: ck, Log: slog.New(slog.NewTextHandler(&log, nil))}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res, model, _, err := boost(job, gangenv.Cluster{WorldSize: 1}, data, nil, job.Log)
	if err != nil {
		t.Fatalf("boost: %v\n%s", err, log.String())
	}
	return model, res, log.String()
}

func resumeParams(rounds int) Params {
	p := DefaultParams()
	p.NumRound, p.MaxDepth, p.NThread = rounds, 4, 1
	return p
}

// TestResumedRunEqualsUninterrupted: a run stopped after round 25 with checkpoints every 10
// rounds resumes at round 20, and its final model is byte for byte the model of a run that went
// through, with the same evaluation history.
func TestResumedRunEqualsUninterrupted(t *testing.T) {
	data := benchData(3000, 8)
	whole, wholeRes, _ := boostOnce(t, resumeParams(40), Checkpointing{}, data)

	ck := Checkpointing{Dir: filepath.Join(t.TempDir(), "checkpoints", "m", "v1"), EveryRounds: 10}
	// The first attempt ends after round 25, as a lost rank ends it: its last checkpoint is 20.
	_, _, log1 := boostOnce(t, resumeParams(25), ck, data)
	if !strings.Contains(log1, "starting from round 0") || strings.Count(log1, "checkpoint written") != 2 {
		t.Fatalf("first attempt: want a start from round 0 and checkpoints at 10 and 20:\n%s", log1)
	}
	resumed, res, log2 := boostOnce(t, resumeParams(40), ck, data)
	if !strings.Contains(log2, "resumed from checkpoint at round 20") {
		t.Fatalf("second attempt did not resume at round 20:\n%s", log2)
	}
	if !reflect.DeepEqual(res.ResumedAt, []int{20}) || res.Rounds != 40 {
		t.Errorf("resumed run: rounds %d, resumed at %v; want 40, [20]", res.Rounds, res.ResumedAt)
	}
	if !bytes.Equal(whole, resumed) {
		t.Fatalf("resumed model (%d bytes) differs from the uninterrupted one (%d bytes)", len(resumed), len(whole))
	}
	if !reflect.DeepEqual(wholeRes.Metrics, res.Metrics) {
		t.Errorf("evaluation history differs:\nuninterrupted %v\nresumed       %v", wholeRes.Metrics["train-rmse"][18:22], res.Metrics["train-rmse"][18:22])
	}
	t.Logf("model of %d bytes equal after a resume at round 20", len(whole))
}

// TestCheckpointOfOtherSettingsIsRefused: a checkpoint trained with another eta, or other data, is
// not resumed: the run starts from round 0, says why, and gives the model of its own settings.
func TestCheckpointOfOtherSettingsIsRefused(t *testing.T) {
	data := benchData(2000, 6)
	ck := Checkpointing{Dir: t.TempDir(), EveryRounds: 5}
	boostOnce(t, resumeParams(12), ck, data)

	p := resumeParams(20)
	p.Eta = 0.1
	want, _, _ := boostOnce(t, p, Checkpointing{}, data)
	got, res, log := boostOnce(t, p, ck, data)
	if !strings.Contains(log, "checkpoint refused") || !strings.Contains(log, `param.eta \"0.3\" (now \"0.1\")`) || !strings.Contains(log, "starting from round 0") {
		t.Fatalf("log does not refuse the checkpoint naming eta:\n%s", log)
	}
	if len(res.ResumedAt) != 0 || !bytes.Equal(got, want) {
		t.Fatalf("refused checkpoint still used: resumed at %v, model equal %v", res.ResumedAt, bytes.Equal(got, want))
	}

	// Same settings, one label changed: other data.
	ck2 := Checkpointing{Dir: t.TempDir(), EveryRounds: 5}
	boostOnce(t, resumeParams(12), ck2, data)
	changed := *data
	changed.Labels = append([]float32(nil), data.Labels...)
	changed.Labels[7]++
	_, res, log = boostOnce(t, resumeParams(20), ck2, &changed)
	if !strings.Contains(log, "checkpoint refused") || !strings.Contains(log, "data_sha256") || len(res.ResumedAt) != 0 {
		t.Fatalf("checkpoint of other data not refused (resumed at %v):\n%s", res.ResumedAt, log)
	}
}

// TestDamagedCheckpointIsNotUsed: a newest checkpoint cut short (a torn write) is named and passed
// over; the run resumes from the one before and still ends with the uninterrupted model.
func TestDamagedCheckpointIsNotUsed(t *testing.T) {
	data := benchData(2000, 6)
	whole, _, _ := boostOnce(t, resumeParams(30), Checkpointing{}, data)
	ck := Checkpointing{Dir: t.TempDir(), EveryRounds: 10, Keep: 3}
	boostOnce(t, resumeParams(25), ck, data)
	newest := filepath.Join(ck.Dir, checkpoint.FileName(20))
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newest, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	got, res, log := boostOnce(t, resumeParams(30), ck, data)
	if !strings.Contains(log, "checkpoint damaged") || !strings.Contains(log, "round-000020.ckpt") || !strings.Contains(log, "cut short") {
		t.Fatalf("no message naming the damaged checkpoint:\n%s", log)
	}
	if !reflect.DeepEqual(res.ResumedAt, []int{10}) || !bytes.Equal(got, whole) {
		t.Fatalf("resumed at %v (want [10]), model equal to uninterrupted: %v", res.ResumedAt, bytes.Equal(got, whole))
	}
}

// TestResumeKeepsEarlyStopping: the early-stopping state travels in the checkpoint, so a resumed
// run stops at the round the uninterrupted one stops at.
func TestResumeKeepsEarlyStopping(t *testing.T) {
	data := benchData(400, 6)
	p := resumeParams(300)
	p.Eta, p.EarlyStoppingRounds = 0.8, 3
	// Evaluate on the training data itself through a split: early stopping needs an eval set.
	job := func(rounds int, ck Checkpointing) ([]byte, *Result) {
		q := p
		q.NumRound = rounds
		var log bytes.Buffer
		j := Job{Params: q, ModelFormat: "json", EvalFraction: 0.5, Checkpoint: ck, Log: slog.New(slog.NewTextHandler(&log, nil))}
		tr, ev := dataset.SplitTrainTest(data, 0.5, 1)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		res, model, _, err := boost(j, gangenv.Cluster{WorldSize: 1}, tr, ev, j.Log)
		if err != nil {
			t.Fatal(err)
		}
		return model, res
	}
	whole, wres := job(300, Checkpointing{})
	if wres.Rounds >= 300 || wres.Rounds < 6 {
		t.Skipf("no early stop in a useful range (%d rounds): the data set does not exercise it", wres.Rounds)
	}
	ck := Checkpointing{Dir: t.TempDir(), EveryRounds: 1}
	job(wres.Rounds-2, ck)
	got, res := job(300, ck)
	if res.Rounds != wres.Rounds || res.BestIteration != wres.BestIteration || !bytes.Equal(got, whole) {
		t.Fatalf("resumed run stopped after %d rounds (best %d), uninterrupted after %d (best %d); models equal %v",
			res.Rounds, res.BestIteration, wres.Rounds, wres.BestIteration, bytes.Equal(got, whole))
	}
}
