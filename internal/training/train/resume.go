package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gangboost/gangboost/internal/training/checkpoint"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/xgb"
)

// Checkpointing is where and how often rank 0 writes checkpoints.
type Checkpointing struct {
	// Dir receives the checkpoints ("": none are written and none are resumed from).
	Dir string
	// EveryRounds writes one after every k rounds (0: not by rounds); EverySeconds once that
	// long has passed since the last one (0: not by time).
	EveryRounds  int
	EverySeconds time.Duration
	// Keep is how many remain (0: checkpoint.DefaultKeep).
	Keep int
}

func (c Checkpointing) enabled() bool { return c.Dir != "" }

// settingsOf are what a model's trees depend on, as a checkpoint records them: a checkpoint is
// resumed only when every one is the same. num_round and early_stopping_rounds only say when to
// stop, and nthread only how fast; the trees of the first k rounds do not depend on them.
func settingsOf(s schema, dataDigest string, world int) map[string]string {
	m := map[string]string{}
	for k, v := range s.Params {
		switch k {
		case "num_round", "early_stopping_rounds", "nthread":
			continue
		}
		m["param."+k] = v
	}
	m["features"] = strconv.Itoa(s.Features)
	m["feature_names"] = strings.Join(s.FeatureNames, ",")
	m["label"] = s.Label
	m["classes"] = strings.Join(s.Classes, ",")
	m["num_class"] = strconv.Itoa(s.NumClass)
	m["eval"] = strconv.FormatBool(s.Eval)
	// Each rank's rows: the same files read by another number of ranks are other shards, and
	// distributed hist builds its bins from them.
	m["world_size"] = strconv.Itoa(world)
	m["data_sha256"] = dataDigest
	return m
}

// matrixDigest is the sha256 of a rank's training (and evaluation) rows and labels.
func matrixDigest(ms ...*dataset.Matrix) [32]byte {
	h := sha256.New()
	for _, m := range ms {
		if m == nil {
			h.Write([]byte{0})
			continue
		}
		var dims [16]byte
		binary.LittleEndian.PutUint64(dims[:], uint64(m.Rows))
		binary.LittleEndian.PutUint64(dims[8:], uint64(m.Cols))
		h.Write(dims[:])
		h.Write(floatBytes(m.Data))
		h.Write(floatBytes(m.Labels))
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// floatBytes views v's memory as bytes: every rank of a gang runs on the same architecture.
func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

// gangDataDigest combines every rank's matrixDigest into one digest, equal on every rank.
func gangDataDigest(c collective, rank, world int, local [32]byte) (string, error) {
	all := make([]float64, world*8)
	for i := range 8 {
		all[rank*8+i] = float64(binary.BigEndian.Uint32(local[4*i:]))
	}
	if world > 1 {
		if err := c.allreduceSum(all); err != nil {
			return "", fmt.Errorf("digest the ranks' data: %w", err)
		}
	}
	h := sha256.New()
	var w [4]byte
	for _, v := range all {
		binary.BigEndian.PutUint32(w[:], uint32(v))
		h.Write(w[:])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// trainerState is the trainer's part of a checkpoint besides the model and metrics: the early
// stopping callback's state, so that a resumed run stops where the uninterrupted one would.
type trainerState struct {
	BestScore float64 `json:"best_score"`
	BestRound int     `json:"best_round"`
	Seen      bool    `json:"seen"`
}

// choose is rank 0's pick of the checkpoint to resume from: the newest whole one, if it was
// trained with settings; nil to start from round 0. Every file passed over, and why, is logged.
//
// A checkpoint of other settings or data is not resumed, and training starts from round 0: the
// step that trains a model version again with new settings (a re-run of the pipeline) finds the
// previous run's checkpoints in the same folder, and what it must produce is the model of its own
// settings, which is what an uninterrupted run gives. Failing instead would make every such
// re-run fail until someone deleted the folder by hand.
func choose(dir checkpoint.Dir, settings map[string]string, numRound int, log *slog.Logger) []byte {
	found, err := dir.Latest()
	if err != nil {
		log.Warn("cannot read the checkpoint folder: starting from round 0", "dir", dir.Path, "err", err)
		return nil
	}
	for _, s := range found.Skipped {
		log.Warn("checkpoint damaged, not used (was it written by something else, or cut short by a full disk?)", "file", s.Path, "reason", s.Reason)
	}
	if found.State == nil {
		if len(found.Skipped) > 0 {
			log.Warn("no usable checkpoint: starting from round 0", "dir", dir.Path)
		}
		return nil
	}
	st := found.State
	if st.Fingerprint != checkpoint.Fingerprint(settings) {
		diff := checkpoint.Differences(st.Settings, settings, 8)
		log.Warn("checkpoint refused: it was trained with other settings or data; starting from round 0 (it is replaced by this run's checkpoints)",
			"file", found.Path, "round", st.Round, "differences", strings.Join(diff, "; "))
		return nil
	}
	if st.Round > numRound {
		log.Warn("checkpoint refused: it is past num_round; starting from round 0", "file", found.Path, "round", st.Round, "num_round", numRound)
		return nil
	}
	return found.Raw
}

// shareCheckpoint gives every rank the checkpoint rank 0 chose (raw on rank 0; ignored elsewhere)
// through the collective, so that the ranks never read the claim at different moments, and
// returns it decoded; nil when the gang starts from round 0.
func shareCheckpoint(c collective, rank, world int, raw []byte) (*checkpoint.State, error) {
	if world > 1 {
		n := make([]byte, 8)
		if rank == 0 {
			binary.BigEndian.PutUint64(n, uint64(len(raw)))
		}
		if err := c.broadcast(n, 0); err != nil {
			return nil, fmt.Errorf("share the checkpoint: %w", err)
		}
		size := binary.BigEndian.Uint64(n)
		if rank != 0 {
			raw = make([]byte, size)
		}
		if size > 0 {
			if err := c.broadcast(raw, 0); err != nil {
				return nil, fmt.Errorf("share the checkpoint: %w", err)
			}
		}
	}
	if len(raw) == 0 {
		return nil, nil
	}
	st, err := checkpoint.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint rank 0 sent: %w", err)
	}
	return st, nil
}

// agreeOnStart checks that every rank starts from the same round with the same model: each puts
// its round and its model's digest in its slot of one allreduce, and every rank compares them all
// with rank 0's. A gang whose ranks would boost on from different models blocks or trains a
// wrong model; this fails every rank with the same message instead.
func agreeOnStart(c collective, rank, world, round int, model []byte) error {
	if world < 2 {
		return nil
	}
	const slot = 9
	all := make([]float64, world*slot)
	sum := sha256.Sum256(model)
	mine := all[rank*slot : (rank+1)*slot]
	mine[0] = float64(round)
	for i := range 8 {
		mine[1+i] = float64(binary.BigEndian.Uint32(sum[4*i:]))
	}
	if err := c.allreduceSum(all); err != nil {
		return fmt.Errorf("compare the ranks' starting models: %w", err)
	}
	for r := 1; r < world; r++ {
		a, b := all[:slot], all[r*slot:(r+1)*slot]
		for i := range a {
			if a[i] != b[i] {
				return &gangError{fmt.Errorf("rank %d starts from round %d, rank 0 from round %d (or their models differ): every rank must resume from the same checkpoint",
					r, int(b[0]), int(a[0]))}
			}
		}
	}
	return nil
}

// checkpointWriter writes rank 0's checkpoints when they are due.
type checkpointWriter struct {
	opts     Checkpointing
	dir      checkpoint.Dir
	settings map[string]string
	resumes  []int
	log      *slog.Logger
	now      func() time.Time

	last      time.Time
	lastRound int
}

// due reports whether a checkpoint is due after round (1-based), on rank 0.
func (w *checkpointWriter) due(round int) bool {
	if w == nil || round <= w.lastRound {
		return false
	}
	if w.opts.EveryRounds > 0 && round%w.opts.EveryRounds == 0 {
		return true
	}
	return w.opts.EverySeconds > 0 && w.now().Sub(w.last) >= w.opts.EverySeconds
}

// write stores the booster after round; a failure is logged and training goes on: a checkpoint
// only shortens a restart, and a full claim should not end the run that would otherwise finish.
func (w *checkpointWriter) write(bst *xgb.Booster, round int, metrics map[string][]float64, stopper earlyStopper) {
	start := w.now()
	model, err := bst.ModelBytes("ubj")
	if err != nil {
		w.log.Warn("checkpoint not written", "round", round, "err", err)
		return
	}
	ts, _ := json.Marshal(trainerState{BestScore: stopper.best, BestRound: stopper.bestRound, Seen: stopper.seen})
	st := &checkpoint.State{Round: round, Settings: w.settings, Fingerprint: checkpoint.Fingerprint(w.settings),
		Metrics: metrics, Resumes: w.resumes, XGBoostVersion: xgb.Version(), Trainer: ts, Model: model}
	written, err := w.dir.Write(st)
	w.last, w.lastRound = w.now(), round
	if err != nil {
		w.log.Warn("checkpoint not written", "round", round, "err", err)
		return
	}
	w.log.Info("checkpoint written", "round", round, "file", written.Path, "bytes", written.Bytes,
		"seconds", w.now().Sub(start).Seconds())
}
