// Package train runs one rank of an XGBoost training job: it loads this rank's shard of the data,
// joins the gang (rank 0 also hosts the rendezvous tracker), boosts round by round through
// libxgboost's collective, and on rank 0 writes the model and its metadata once every rank has
// finished.
package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/training/checkpoint"
	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/gangenv"
	"github.com/gangboost/gangboost/internal/training/gangwatch"
	"github.com/gangboost/gangboost/internal/training/trainflags"
	"github.com/gangboost/gangboost/internal/training/xgb"
)

// Job is what one rank trains and where the model goes.
type Job struct {
	Params Params
	Train  dataset.Spec
	// Eval is the evaluation data set. Without it, EvalFraction of the training rows (if > 0)
	// are held out for evaluation.
	Eval         *dataset.Spec
	EvalFraction float64
	// ModelDir receives model.<format> and metadata.json (rank 0 only): a folder, or an object
	// store prefix s3://<bucket>/<prefix>/<model>/<version>/ reached through ModelStore.
	ModelDir    string
	ModelStore  objectstore.Config
	ModelFormat string // "json" or "ubj"
	// Producer is who writes the model (metadata.json's producer): a ModelDir it wrote before
	// (an earlier attempt of the same job) is replaced; any other existing one only with
	// Overwrite.
	Producer  string
	Overwrite bool
	// LogEvery makes only every k-th round eligible for a progress line (1: every round); a
	// line is printed at most once a second or per 1% of the rounds, and for the last round.
	LogEvery int
	// Checkpoint is where and how often rank 0 writes checkpoints, and where a restarted gang
	// resumes from.
	Checkpoint Checkpointing
	// WatchPort is where rank 0 watches the gang for lost ranks; 0 means TrackerPort+1.
	WatchPort int
	Watch     gangwatch.Options
	Log       *slog.Logger
}

// DefaultGangStartTimeout is how long the ranks wait for the whole gang to join when
// Job.Watch.StartTimeout is 0.
const DefaultGangStartTimeout = trainflags.DefaultGangStartTimeout

// Validate checks the job's settings before any data is read or any rank started, naming the
// setting and the valid values.
func (job Job) Validate() error {
	if err := job.Params.Validate(); err != nil {
		return err
	}
	if err := trainflags.CheckModelFormat(job.ModelFormat); err != nil {
		return err
	}
	c := job.Checkpoint
	if err := trainflags.CheckCheckpointing(c.EveryRounds, int(c.EverySeconds/time.Second), max(c.Keep, 1)); err != nil {
		return err
	}
	return trainflags.CheckEvalFraction(job.EvalFraction)
}

// CheckModelDir reports whether the model may be published at ModelDir, and whether publishing
// replaces a folder there: a new folder is published without replacing anything (of two
// publishers racing for it, one wins); an existing one only when Producer wrote it or with
// Overwrite, and then only when it is a model folder (it is replaced whole).
func (job Job) CheckModelDir() (replace bool, err error) {
	if objectstore.IsURI(job.ModelDir) {
		f, err := job.modelObjects()
		if err != nil {
			return false, fmt.Errorf("--model-dir: %w", err)
		}
		if job.Overwrite {
			return true, nil
		}
		// The job's own earlier output is replaced whole: its metadata goes first.
		return f.CheckNew(context.Background(), job.Producer)
	}
	dir := filepath.Clean(job.ModelDir)
	if !job.Overwrite {
		own, err := modeldir.CheckNew(dir, job.Producer)
		if err != nil || !own {
			return false, err
		}
	}
	if err := modeldir.CheckReplaceable(dir, modeldir.ModelFolder); err != nil {
		return false, fmt.Errorf("--model-dir: %w", err)
	}
	_, err = os.Lstat(dir)
	return err == nil, nil
}

// modelObjects is the object store folder of an s3:// ModelDir.
func (job Job) modelObjects() (*modelobjects.Folder, error) {
	return modelobjects.Open(job.ModelDir, job.ModelStore, "trainer "+job.Producer)
}

// publish writes the model and its metadata to ModelDir and says where the model file is.
func (job Job) publish(ctx context.Context, out outcome, replace bool) (string, error) {
	if !objectstore.IsURI(job.ModelDir) {
		if err := modeldir.Publish(job.ModelDir, out.md.ModelFile, out.model, out.md, replace); err != nil {
			return "", err
		}
		return filepath.Join(job.ModelDir, out.md.ModelFile), nil
	}
	f, err := job.modelObjects()
	if err != nil {
		return "", err
	}
	if err := f.Publish(ctx, out.md.ModelFile, out.model, out.md, replace); err != nil {
		return "", err
	}
	return f.URI() + out.md.ModelFile, nil
}

// Result is what a rank knows when training ends.
type Result struct {
	Rounds int
	// ResumedAt are the rounds this training resumed at from checkpoints, oldest first (empty
	// when it ran from round 0 without a restart).
	ResumedAt     []int
	BestIteration int
	Metrics       map[string][]float64
	ModelSHA256   string // of the serialised model; equal on every rank
	ModelPath     string // rank 0 only
}

// Run trains this rank's part of the job. It returns when this rank is done, or as soon as
// another rank of the gang is lost (the error names it), even while libxgboost is blocked in a
// collective call: the caller should then exit the process.
func Run(ctx context.Context, job Job, cl gangenv.Cluster) (*Result, error) {
	log := job.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("rank", cl.Rank)
	if err := job.Validate(); err != nil {
		return nil, err
	}
	// A --model-dir that may not be written fails now, not after the training it would have
	// cost.
	var replace bool
	if cl.Rank == 0 && job.ModelDir != "" {
		var err error
		if replace, err = job.CheckModelDir(); err != nil {
			return nil, err
		}
	}
	if job.ModelFormat == "" {
		job.ModelFormat = modeldir.FormatJSON
	}
	if job.Watch.StartTimeout <= 0 {
		job.Watch.StartTimeout = DefaultGangStartTimeout
	}
	if job.LogEvery <= 0 {
		job.LogEvery = 1
	}

	// Every rank reads and validates the whole input before it joins the gang, so bad data makes
	// every rank fail at once with the same message.
	shard := dataset.Shard{Rank: cl.Rank, World: cl.WorldSize}
	trainM, err := dataset.Load(job.Train, shard)
	if err != nil {
		return nil, err
	}
	if !trainM.Partial && trainM.TotalRows < cl.WorldSize {
		// The rank without rows fails in Load; the others must not wait for it.
		return nil, fmt.Errorf("%s: %d data rows cannot give each of %d ranks a row; use at most %d ranks",
			specName(job.Train), trainM.TotalRows, cl.WorldSize, trainM.TotalRows)
	}
	var evalM *dataset.Matrix
	switch {
	case job.Eval != nil:
		spec := *job.Eval
		// The evaluation set uses the training set's class indices, category codes and feature
		// count.
		spec.Classes, spec.NumFeatures = trainM.Classes, trainM.Cols
		if trainM.Partial {
			// This rank's classes and categories are not all of them: the ranks agree on them
			// before boosting (categories a schema names stay fixed).
			spec.Classes = nil
		} else {
			spec.Categories = trainM.CategoryMap()
		}
		if evalM, err = dataset.Load(spec, shard); err != nil {
			return nil, err
		}
	case job.EvalFraction > 0:
		trainM, evalM = dataset.SplitTrainTest(trainM, job.EvalFraction, int64(job.Params.Seed))
	}
	if evalM != nil && evalM.Cols != trainM.Cols {
		return nil, fmt.Errorf("evaluation data has %d feature columns, training data %d", evalM.Cols, trainM.Cols)
	}
	log.Info("data loaded", "train_rows", trainM.Rows, "eval_rows", rowsOf(evalM), "features", trainM.Cols,
		"world_size", cl.WorldSize, "contract", cl.Source)

	var g gang
	if cl.Distributed() {
		if g, err = joinGang(ctx, job, cl, log); err != nil {
			return nil, err
		}
		defer g.close()
		cl.TrackerPort = g.trackerPort()
		if cl.TrackerHost, err = trackerIP(ctx, cl.TrackerHost, job.Watch.StartTimeout); err != nil {
			return nil, err
		}
	}

	done := make(chan outcome, 1)
	go func() {
		// libxgboost keeps the communicator per OS thread: every call of this rank runs here.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		res, model, md, err := boost(job, cl, trainM, evalM, log)
		done <- outcome{res, model, md, err}
	}()

	var lost <-chan *gangwatch.LostError // nil for a single process: never ready
	if g != nil {
		lost = g.lost()
	}
	var out outcome
	select {
	case out = <-done:
	case l := <-lost:
		return nil, fmt.Errorf("training stopped: %w", l)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if out.err != nil {
		return nil, failure(ctx, out.err, g, job, log)
	}
	log.Info("training finished", "rounds", out.res.Rounds, "model_sha256", out.res.ModelSHA256)

	if g != nil {
		// Rank 0 writes the model only once every rank has finished, so the job's success means
		// the whole gang completed.
		wctx, cancel := context.WithTimeout(ctx, job.Watch.StartTimeout+time.Minute)
		defer cancel()
		if err := g.done(wctx); err != nil {
			return nil, fmt.Errorf("waiting for the other ranks: %w", err)
		}
	}
	if cl.Rank == 0 && job.ModelDir != "" {
		out.md.Producer = job.Producer
		if out.res.ModelPath, err = job.publish(ctx, out, replace); err != nil {
			return nil, err
		}
		log.Info("model written", "path", out.res.ModelPath, "sha256", out.md.ModelSHA256)
		if job.Checkpoint.enabled() {
			// The run a checkpoint would resume is complete: its model is published.
			if err := (checkpoint.Dir{Path: job.Checkpoint.Dir}).Remove(); err != nil {
				log.Warn("checkpoints not removed", "dir", job.Checkpoint.Dir, "err", err)
			}
		}
	}
	return out.res, nil
}

// failure is what Run reports when boosting failed with err.
func failure(ctx context.Context, err error, g gang, job Job, log *slog.Logger) error {
	if g == nil {
		return err
	}
	var ge *gangError
	if errors.As(err, &ge) {
		// Every rank failed the same check: say done like a finished rank, so that no rank
		// reports the others' exits as lost ranks (exit 3) instead of this error.
		wctx, cancel := context.WithTimeout(ctx, job.Watch.StartTimeout+time.Minute)
		_ = g.done(wctx)
		cancel()
		return err
	}
	// When a rank dies, its peers' collective calls fail at once, often before the gang watch has
	// named it. Exiting now would close this rank's watch connection too, and rank 0 could then
	// see this survivor go before the dead rank and name the wrong one (under load, rank 0 reads
	// both closed connections in one go). So stay in the gang, heartbeating, until the watch names
	// the lost rank; only when none is named in that time is the failure this rank's own.
	if l := awaitLoss(ctx, g.lost(), job.Watch.NoticeWithin()); l != nil {
		log.Info("libxgboost failed after another rank was lost", "err", err)
		return fmt.Errorf("training stopped: %w", l)
	}
	return err
}

// awaitLoss waits up to d for the gang watch to name a lost rank; nil if none was named.
func awaitLoss(ctx context.Context, lost <-chan *gangwatch.LostError, d time.Duration) *gangwatch.LostError {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case l := <-lost:
		return l
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

type outcome struct {
	res   *Result
	model []byte
	md    *modeldir.Metadata
	err   error
}

func specName(s dataset.Spec) string {
	if s.Builtin != "" {
		return "built-in data set " + s.Builtin
	}
	return s.Path
}

func rowsOf(m *dataset.Matrix) int {
	if m == nil {
		return 0
	}
	return m.Rows
}

// boost runs on one locked OS thread: join the collective, build the matrices, boost, serialise.
func boost(job Job, cl gangenv.Cluster, trainM, evalM *dataset.Matrix, log *slog.Logger) (*Result, []byte, *modeldir.Metadata, error) {
	if cl.Distributed() {
		// libxgboost 3.0's keys (c_api.h, XGCommunicatorInit): lower case, and the communicator
		// named as the tracker's. dmlc_timeout bounds the bootstrap's network waits as the
		// gang watch bounds the gang's start.
		cfg := map[string]any{
			"dmlc_communicator": "rabit",
			"dmlc_tracker_uri":  cl.TrackerHost,
			"dmlc_tracker_port": cl.TrackerPort,
			"dmlc_task_id":      strconv.Itoa(cl.Rank),
			"dmlc_timeout":      max(1, int(job.Watch.StartTimeout/time.Second)),
		}
		if err := xgb.CommunicatorInit(cfg); err != nil {
			return nil, nil, nil, err
		}
		defer xgb.CommunicatorFinalize()
		if got := xgb.WorldSize(); got != cl.WorldSize {
			return nil, nil, nil, fmt.Errorf("joined a collective of %d ranks, want %d", got, cl.WorldSize)
		}
	}

	// Ranks that read the data in shares complete the whole-input facts (row count, label range,
	// class names) together.
	if err := agreeOnData(xgbCollective{}, cl.Rank, max(cl.WorldSize, 1), trainM, evalM); err != nil {
		return nil, nil, nil, err
	}
	params := job.Params
	if params.IsMultiClass() && params.NumClass == 0 {
		n, err := numClasses(trainM)
		if err != nil {
			return nil, nil, nil, err
		}
		params.NumClass = n
	}

	// Before the first collective call that assumes equal shapes on every rank: ranks that differ
	// fail here, all with the same message, instead of blocking inside libxgboost.
	fraction := job.EvalFraction
	if job.Eval != nil {
		fraction = 0
	}
	if err := agree(xgbCollective{}, cl.Rank, max(cl.WorldSize, 1), newSchema(params, trainM, evalM),
		trainM.Rows, rowsOf(evalM), fraction); err != nil {
		return nil, nil, nil, err
	}

	// Every rank builds the same matrices in the same order: libxgboost synchronises column
	// counts and sketches across ranks while building them.
	types, err := featureTypes(params, trainM)
	if err != nil {
		return nil, nil, nil, err
	}
	if evalM != nil && evalM.UnseenCategories > 0 {
		log.Warn("evaluation data: categories the training data lacks are missing values", "values", evalM.UnseenCategories)
	}
	dtrain, err := matrix(trainM, types)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("training data: %w", err)
	}
	defer dtrain.Free()
	dms, names := []*xgb.DMatrix{dtrain}, []string{"train"}
	if evalM != nil {
		deval, err := matrix(evalM, types)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("evaluation data: %w", err)
		}
		defer deval.Free()
		dms, names = append(dms, deval), append(names, "eval")
	}
	// Where the gang starts: round 0, or the checkpoint rank 0 chose, which every rank receives
	// from it and checks it holds before boosting on.
	var resumed *checkpoint.State
	var ckpt *checkpointWriter
	if job.Checkpoint.enabled() {
		digest, err := gangDataDigest(xgbCollective{}, cl.Rank, max(cl.WorldSize, 1), matrixDigest(trainM, evalM))
		if err != nil {
			return nil, nil, nil, err
		}
		settings := settingsOf(newSchema(params, trainM, evalM), digest, max(cl.WorldSize, 1))
		var raw []byte
		if cl.Rank == 0 {
			raw = choose(checkpoint.Dir{Path: job.Checkpoint.Dir}, settings, params.NumRound, log)
		}
		if resumed, err = shareCheckpoint(xgbCollective{}, cl.Rank, max(cl.WorldSize, 1), raw); err != nil {
			return nil, nil, nil, err
		}
		if cl.Rank == 0 {
			ckpt = &checkpointWriter{opts: job.Checkpoint, dir: checkpoint.Dir{Path: job.Checkpoint.Dir, Keep: job.Checkpoint.Keep},
				settings: settings, log: log, now: time.Now, last: time.Now()}
		}
	}
	var bst *xgb.Booster
	if resumed != nil {
		bst, err = xgb.LoadBoosterBytes(resumed.Model, dms...)
	} else {
		bst, err = xgb.NewBooster(dms...)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	defer bst.Free()
	for _, kv := range params.Booster() {
		if err := bst.SetParam(kv[0], kv[1]); err != nil {
			return nil, nil, nil, err
		}
	}
	// The C API does not copy a matrix's feature types into the booster (the Python package
	// does): set them, so the model file says which features are categorical.
	if err := bst.SetFeatureTypes(types); err != nil {
		return nil, nil, nil, err
	}

	metrics := map[string][]float64{}
	stopper := earlyStopper{patience: params.EarlyStoppingRounds}
	rounds := 0
	var resumes []int
	if resumed != nil {
		have, err := bst.BoostedRounds()
		if err != nil {
			return nil, nil, nil, err
		}
		if have != resumed.Round {
			return nil, nil, nil, fmt.Errorf("the checkpoint of round %d holds a model of %d rounds", resumed.Round, have)
		}
		rounds, metrics = resumed.Round, resumed.Metrics
		if metrics == nil {
			metrics = map[string][]float64{}
		}
		var ts trainerState
		if len(resumed.Trainer) > 0 {
			if err := json.Unmarshal(resumed.Trainer, &ts); err != nil {
				return nil, nil, nil, fmt.Errorf("the checkpoint of round %d: trainer state: %w", resumed.Round, err)
			}
		}
		stopper.best, stopper.bestRound, stopper.seen = ts.BestScore, ts.BestRound, ts.Seen
		resumes = append(append(resumes, resumed.Resumes...), resumed.Round)
	}
	var startModel []byte
	if resumed != nil {
		startModel = resumed.Model
	}
	if err := agreeOnStart(xgbCollective{}, cl.Rank, max(cl.WorldSize, 1), rounds, startModel); err != nil {
		return nil, nil, nil, err
	}
	if resumed != nil {
		log.Info("resumed from checkpoint at round "+strconv.Itoa(resumed.Round), "round", resumed.Round, "of", params.NumRound,
			"resumes", len(resumes))
		if sampled(params) {
			log.Warn("row or column sampling is on: libxgboost does not restore its random state from a model, so the resumed rounds draw other samples than an uninterrupted run would")
		}
	} else if job.Checkpoint.enabled() {
		log.Info("starting from round 0", "checkpoint_dir", job.Checkpoint.Dir)
	}
	if ckpt != nil {
		ckpt.resumes, ckpt.lastRound = resumes, rounds
	}

	start := time.Now()
	first := rounds
	progress := newRoundLog(job.LogEvery, params.NumRound)
	progress.startAt(first, start)
	stop := resumed != nil && params.EarlyStoppingRounds > 0 && stopper.seen && rounds-1-stopper.bestRound >= params.EarlyStoppingRounds
	for i := first; i < params.NumRound && !stop; i++ {
		if err := bst.UpdateOneIter(i, dtrain); err != nil {
			return nil, nil, nil, err
		}
		rounds = i + 1
		line, err := bst.EvalOneIter(i, dms, names)
		if err != nil {
			return nil, nil, nil, err
		}
		ms, err := parseEvalLine(line)
		if err != nil {
			return nil, nil, nil, err
		}
		attrs := []any{"round", rounds, "of", params.NumRound}
		for _, m := range ms {
			metrics[m.Name] = append(metrics[m.Name], m.Value)
			attrs = append(attrs, m.Name, m.Value)
		}
		stop = len(ms) > 0 && stopper.observe(i, ms[len(ms)-1])
		if progress.due(rounds, rounds == params.NumRound || stop) {
			log.Info("round", append(attrs, progress.rate(rounds)...)...)
		}
		if stop {
			log.Info("early stopping", "best_iteration", stopper.bestRound, "best_score", stopper.best,
				"patience", params.EarlyStoppingRounds)
			break
		}
		if rounds < params.NumRound && ckpt.due(rounds) {
			ckpt.write(bst, rounds, metrics, stopper)
		}
	}
	best := rounds - 1
	var bestScore *float64
	if stopper.seen && params.EarlyStoppingRounds > 0 {
		best = stopper.bestRound
		s := stopper.best
		bestScore = &s
		// Recorded as XGBoost's early-stopping callback does, so clients see the same attributes.
		if err := bst.SetAttr("best_iteration", strconv.Itoa(best)); err != nil {
			return nil, nil, nil, err
		}
		if err := bst.SetAttr("best_score", strconv.FormatFloat(s, 'g', -1, 64)); err != nil {
			return nil, nil, nil, err
		}
	}
	log.Info("boosting done", "rounds", rounds, "rounds_this_run", rounds-first, "seconds", time.Since(start).Seconds())

	model, err := bst.ModelBytes(job.ModelFormat)
	if err != nil {
		return nil, nil, nil, err
	}
	nfeat, err := bst.NumFeatures()
	if err != nil {
		return nil, nil, nil, err
	}
	sum := sha256.Sum256(model)
	res := &Result{Rounds: rounds, ResumedAt: resumes, BestIteration: best, Metrics: metrics, ModelSHA256: hex.EncodeToString(sum[:])}
	md := &modeldir.Metadata{
		ModelFile: modeldir.ModelFileName(job.ModelFormat), Objective: params.Objective, NumFeatures: nfeat,
		FeatureNames: trainM.FeatureNames, Label: trainM.LabelName, Classes: trainM.Classes,
		Categories: trainM.CategoryMap(), NumClass: params.NumClass, Rounds: rounds, BestIteration: best, BestScore: bestScore,
		Metrics: metrics, Params: params.Map(), XGBoostVersion: xgb.Version(), WorldSize: cl.WorldSize,
		TrainRows: trainM.Rows, ResumedAt: resumes,
	}
	if cl.Distributed() {
		// Total training rows across the gang.
		n := []float64{float64(trainM.Rows)}
		if err := xgb.AllreduceSumFloat64(n); err != nil {
			return nil, nil, nil, err
		}
		md.TrainRows = int(n[0])
	}
	return res, model, md, nil
}

// sampled reports whether training draws random rows or columns.
func sampled(p Params) bool {
	if p.Subsample < 1 || p.ColsampleBytree < 1 {
		return true
	}
	for _, k := range []string{"colsample_bylevel", "colsample_bynode"} {
		if v, ok := p.Extra[k]; ok {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < 1 {
				return true
			}
		}
	}
	return false
}

// numClasses is the class count for multi:* objectives: the label column's distinct strings, or
// the largest numeric label + 1 in the whole input (equal on every rank).
func numClasses(m *dataset.Matrix) (int, error) {
	if len(m.Classes) > 0 {
		return len(m.Classes), nil
	}
	for _, l := range m.Labels {
		if float64(l) != math.Trunc(float64(l)) || l < 0 {
			return 0, fmt.Errorf("label %q: value %v is not a class index (want 0, 1, 2, ...)", m.LabelName, l)
		}
	}
	if m.LabelMax < 1 {
		return 0, fmt.Errorf("label %q: a multi-class objective needs at least 2 classes", m.LabelName)
	}
	return int(m.LabelMax) + 1, nil
}

// featureTypes are libxgboost's feature types of m's columns: "c" for the columns named
// categorical and for text columns (whose values are category codes), "q" for the others; nil
// when none is categorical.
func featureTypes(params Params, m *dataset.Matrix) ([]string, error) {
	types, err := params.FeatureTypes(m.FeatureNames)
	if err != nil || m.Categories == nil {
		return types, err
	}
	if types == nil {
		types = make([]string, m.Cols)
		for j := range types {
			types[j] = "q"
		}
	}
	for j, c := range m.Categories {
		if c != nil {
			types[j] = "c"
		}
	}
	return types, nil
}

func matrix(m *dataset.Matrix, types []string) (*xgb.DMatrix, error) {
	if err := checkCategories(m, types); err != nil {
		return nil, err
	}
	d, err := xgb.NewDMatrixDense(m.Data, m.Rows, m.Cols, float32(math.NaN()))
	if err != nil {
		return nil, err
	}
	if err := d.SetFloatInfo("label", m.Labels); err != nil {
		d.Free()
		return nil, err
	}
	if err := d.SetFeatureNames(m.FeatureNames); err != nil {
		d.Free()
		return nil, err
	}
	if err := d.SetFeatureTypes(types); err != nil {
		d.Free()
		return nil, err
	}
	return d, nil
}

// maxCategory bounds a category code: libxgboost keeps categories as float32, exact up to 2^24.
const maxCategory = 1 << 24

// checkCategories refuses a categorical column holding anything but category codes, naming the
// column, the value and its row: libxgboost would otherwise fail with "Invalid categorical value"
// (negative, too large) or silently truncate a fraction.
func checkCategories(m *dataset.Matrix, types []string) error {
	for j, t := range types {
		if t != "c" {
			continue
		}
		for i := 0; i < m.Rows; i++ {
			v := m.Data[i*m.Cols+j]
			if v != v { // missing
				continue
			}
			if v < 0 || v >= maxCategory || v != float32(math.Trunc(float64(v))) {
				return fmt.Errorf("categorical feature %s: row %d of this rank's data holds %v; want category codes, integers from 0 to %d (encode the categories as codes)", m.FeatureNames[j], i+1, v, maxCategory-1)
			}
		}
	}
	return nil
}

// gang is this rank's view of the others during training.
type gang interface {
	trackerPort() int // where libxgboost's tracker listens
	lost() <-chan *gangwatch.LostError
	done(ctx context.Context) error
	close()
}

// joinGang starts the tracker and the gang watch on rank 0 and joins the watch on other ranks.
func joinGang(ctx context.Context, job Job, cl gangenv.Cluster, log *slog.Logger) (gang, error) {
	watchPort := job.WatchPort
	if watchPort == 0 {
		watchPort = cl.TrackerPort + 1
	}
	if cl.Rank != 0 {
		m, err := gangwatch.Join(ctx, net.JoinHostPort(cl.TrackerHost, strconv.Itoa(watchPort)), cl.Rank, job.Watch)
		if err != nil {
			return nil, err
		}
		return memberGang{m}, nil
	}
	// libxgboost's tracker listens on the address it is given: every interface, of the tracker
	// host's family. It waits for the gang as long as the gang watch does, whose deadline and
	// lost-rank messages are what the user sees (the tracker's own default is 300 s).
	listen := "0.0.0.0"
	if ip := net.ParseIP(cl.TrackerHost); ip != nil && ip.To4() == nil {
		listen = "::"
	}
	cfg := xgb.TrackerConfig{Workers: cl.WorldSize, Host: listen, Port: cl.TrackerPort, Timeout: job.Watch.StartTimeout}
	tr, err := xgb.StartTracker(cfg)
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		// The tracker binds without SO_REUSEADDR, so a rank 0 restarted on the same host within
		// TIME_WAIT (a local gang's restart) finds the port held by the previous run's closed
		// connections. Any free port serves: the gang watch tells the other ranks which.
		log.Info("tracker port in use, the tracker takes a free one", "port", cl.TrackerPort)
		cfg.Port = 0
		tr, err = xgb.StartTracker(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("start libxgboost's tracker (MASTER_PORT / DMLC_TRACKER_PORT %d): %w", cl.TrackerPort, err)
	}
	args, err := tr.WorkerArgs()
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(fmt.Sprint(args["dmlc_tracker_port"]))
	if err != nil {
		return nil, fmt.Errorf("libxgboost's tracker names no port in its worker args %v", args)
	}
	s, err := gangwatch.Serve(net.JoinHostPort("", strconv.Itoa(watchPort)), cl.WorldSize, port, job.Watch)
	if err != nil {
		return nil, err
	}
	log.Info("tracker started", "tracker", "libxgboost "+xgb.Version(), "port", port,
		"watch_port", watchPort, "world_size", cl.WorldSize)
	return &serverGang{s: s, tr: tr, port: port}, nil
}

type memberGang struct{ m *gangwatch.Member }

func (g memberGang) trackerPort() int                  { return g.m.TrackerPort() }
func (g memberGang) lost() <-chan *gangwatch.LostError { return g.m.Lost() }
func (g memberGang) done(ctx context.Context) error    { return g.m.Done(ctx) }
func (g memberGang) close()                            { g.m.Close() }

type serverGang struct {
	s    *gangwatch.Server
	tr   *xgb.Tracker
	port int
}

func (g *serverGang) trackerPort() int                  { return g.port }
func (g *serverGang) lost() <-chan *gangwatch.LostError { return g.s.Lost() }
func (g *serverGang) done(ctx context.Context) error {
	if err := g.s.Done(ctx); err != nil {
		return err
	}
	// Every rank has finished training; the tracker only waits for their shutdown messages.
	select {
	case <-g.tr.Done():
		return g.tr.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the gang watch. A tracker still running (a rank failed) is left to the process's
// exit, which follows: libxgboost cannot stop it without closing sockets its thread still uses.
func (g *serverGang) close() {
	g.s.Close()
	g.tr.Free()
}
