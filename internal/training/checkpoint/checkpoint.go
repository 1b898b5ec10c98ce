// Package checkpoint keeps a training run's checkpoints in a folder on the claim: it writes one
// atomically (temporary file, fsync, rename, fsync of the folder), keeps a bounded number, and
// finds the newest one that is whole, saying why any newer file was passed over. A checkpoint is
// the model after a completed round, that round, the evaluation history so far and the
// fingerprint of the settings and data it was trained with.
//
// It is pure Go: which checkpoint a gang resumes from, and that every rank resumes from the same
// one, is decided by the trainer (package train) through libxgboost's collective.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/durable"
)

// magic starts every checkpoint file; the version after it changes with the header's meaning.
const magic = "gangboost-checkpoint 1\n"

// filePrefix and fileSuffix frame a checkpoint's round in its file name: round-000120.ckpt.
// Files being written are named .round-*.tmp-* and never read.
const (
	filePrefix = "round-"
	fileSuffix = ".ckpt"
)

// DefaultKeep is how many checkpoints a folder keeps when Dir.Keep is 0: the newest, and one
// before it in case the newest is found damaged.
const DefaultKeep = 2

// State is one checkpoint.
type State struct {
	// Round is the number of completed boosting rounds; the model holds their trees.
	Round int `json:"round"`
	// Settings are what the model's trees depend on (parameters, data schema, the data's digest,
	// the world size), as key/value pairs; Fingerprint is their digest.
	Settings    map[string]string `json:"settings"`
	Fingerprint string            `json:"fingerprint"`
	// Metrics are the evaluation results of rounds 1..Round, as metadata.json records them.
	Metrics map[string][]float64 `json:"metrics"`
	// Resumes are the rounds earlier runs of this training resumed at, oldest first.
	Resumes []int `json:"resumes,omitempty"`
	// XGBoostVersion wrote the model.
	XGBoostVersion string `json:"xgboost_version"`
	// Trainer is the trainer's own state beyond the model (early stopping), opaque here.
	Trainer json.RawMessage `json:"trainer,omitempty"`
	// Model is the booster serialised as UBJSON (exact floats, compact).
	Model []byte `json:"-"`

	ModelBytes  int    `json:"model_bytes"`
	ModelSHA256 string `json:"model_sha256"`
	Written     string `json:"written"` // RFC 3339, for people reading the folder
}

// Fingerprint is the digest of settings: equal settings, equal fingerprint.
func Fingerprint(settings map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		// Length-prefixed, so no two different maps print the same.
		fmt.Fprintf(h, "%d:%s=%d:%s\n", len(k), k, len(settings[k]), settings[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Differences lists how settings have differs from want, e.g. `eta "0.3" (now "0.1")`, at most
// max entries.
func Differences(have, want map[string]string, max int) []string {
	var out []string
	keys := slices.Sorted(maps.Keys(mergeKeys(have, want)))
	for _, k := range keys {
		hv, hok := have[k]
		wv, wok := want[k]
		switch {
		case hok && wok && hv == wv:
			continue
		case !hok:
			out = append(out, fmt.Sprintf("%s unset (now %q)", k, wv))
		case !wok:
			out = append(out, fmt.Sprintf("%s %q (now unset)", k, hv))
		default:
			out = append(out, fmt.Sprintf("%s %q (now %q)", k, hv, wv))
		}
	}
	if len(out) > max {
		out = append(out[:max:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return out
}

func mergeKeys(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// Encode is the file's bytes: the magic line, the header as one JSON line, the model.
func Encode(s *State) ([]byte, error) {
	if s.Round < 1 || len(s.Model) == 0 {
		return nil, fmt.Errorf("checkpoint: round %d with a %d-byte model: nothing to keep", s.Round, len(s.Model))
	}
	h := *s
	sum := sha256.Sum256(s.Model)
	h.ModelBytes, h.ModelSHA256 = len(s.Model), hex.EncodeToString(sum[:])
	if h.Written == "" {
		h.Written = time.Now().UTC().Format(time.RFC3339)
	}
	js, err := json.Marshal(&h)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	out := make([]byte, 0, len(magic)+len(js)+1+len(s.Model))
	out = append(append(append(append(out, magic...), js...), '\n'), s.Model...)
	return out, nil
}

// Decode reads a checkpoint file's bytes, checking that it is whole: the header parses, and the
// model has the length and sha256 the header records (a file cut short, or changed, fails).
func Decode(b []byte) (*State, error) {
	rest, ok := bytes.CutPrefix(b, []byte(magic))
	if !ok {
		return nil, errors.New("not a gangboost checkpoint (its first line is not " + strconv.Quote(strings.TrimSpace(magic)) + ")")
	}
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("header not terminated within %d bytes: the file is cut short", len(rest))
	}
	var s State
	if err := json.Unmarshal(rest[:nl], &s); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	s.Model = rest[nl+1:]
	if len(s.Model) != s.ModelBytes {
		return nil, fmt.Errorf("model has %d bytes, the header says %d: the file is cut short or was changed", len(s.Model), s.ModelBytes)
	}
	sum := sha256.Sum256(s.Model)
	if got := hex.EncodeToString(sum[:]); got != s.ModelSHA256 {
		return nil, fmt.Errorf("model sha256 %s, the header says %s: the file was changed or damaged", got, s.ModelSHA256)
	}
	if s.Round < 1 {
		return nil, fmt.Errorf("header: round %d", s.Round)
	}
	if s.Fingerprint != Fingerprint(s.Settings) {
		return nil, errors.New("header: the fingerprint does not match the settings it records")
	}
	return &s, nil
}

// Dir is a folder of checkpoints, e.g. <claim>/checkpoints/<model>/<version>.
type Dir struct {
	Path string
	// Keep is how many checkpoints remain after a write (0: DefaultKeep).
	Keep int
}

// FileName is the name of the checkpoint of round in its folder.
func FileName(round int) string { return fmt.Sprintf("%s%06d%s", filePrefix, round, fileSuffix) }

// roundOf reads the round from a checkpoint's file name; ok is false for any other name.
func roundOf(name string) (int, bool) {
	mid, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return 0, false
	}
	mid, ok = strings.CutSuffix(mid, fileSuffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(mid)
	return n, err == nil && n > 0
}

// Written is what Write did.
type Written struct {
	Path  string
	Bytes int
	// Removed are the older checkpoints deleted to keep Dir.Keep.
	Removed []string
}

// Write stores s as the checkpoint of s.Round: written to a temporary file in the folder,
// synced, renamed into place and the folder synced, so that a crash at any moment leaves the
// previous checkpoints and either the whole new one or none of it. Then the oldest checkpoints
// beyond Keep are removed.
func (d Dir) Write(s *State) (*Written, error) {
	b, err := Encode(s)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint folder: %w", err)
	}
	name := FileName(s.Round)
	final := filepath.Join(d.Path, name)
	f, err := os.CreateTemp(d.Path, "."+name+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("write checkpoint %s: %w", final, err)
	}
	tmp := f.Name()
	fail := func(err error) (*Written, error) {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("write checkpoint %s: %w", final, err)
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// CreateTemp makes the file private; ranks and launchers may run as other users.
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("write checkpoint %s: %w", final, err)
	}
	if err := durable.SyncDir(d.Path); err != nil {
		return nil, fmt.Errorf("write checkpoint %s: %w", final, err)
	}
	w := &Written{Path: final, Bytes: len(b)}
	w.Removed, err = d.prune()
	return w, err
}

// prune removes all but the newest Keep checkpoints, and temporary files that a writer killed
// mid-write left behind.
func (d Dir) prune() ([]string, error) {
	keep := d.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints in %s: %w", d.Path, err)
	}
	var rounds []int
	var removed []string
	for _, e := range entries {
		if r, ok := roundOf(e.Name()); ok && e.Type().IsRegular() {
			rounds = append(rounds, r)
		} else if strings.HasPrefix(e.Name(), "."+filePrefix) && strings.Contains(e.Name(), fileSuffix+".tmp-") {
			// Only this run's rank 0 writes here, and it is not writing now.
			if os.Remove(filepath.Join(d.Path, e.Name())) == nil {
				removed = append(removed, e.Name())
			}
		}
	}
	slices.Sort(rounds)
	for len(rounds) > keep {
		name := FileName(rounds[0])
		if err := os.Remove(filepath.Join(d.Path, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("remove old checkpoint: %w", err)
		}
		removed = append(removed, name)
		rounds = rounds[1:]
	}
	return removed, nil
}

// Skipped is a checkpoint file passed over, and why.
type Skipped struct {
	Path   string
	Reason string
}

func (s Skipped) String() string { return s.Path + ": " + s.Reason }

// Found is the newest whole checkpoint of a folder: its state, its file's bytes, and the newer
// files that were passed over.
type Found struct {
	State   *State
	Path    string
	Raw     []byte
	Skipped []Skipped
}

// Latest finds the newest checkpoint that reads whole. A newer file that does not (cut short,
// changed, not a checkpoint) is passed over and named in Found.Skipped with the reason. A folder
// that does not exist, or holds no whole checkpoint, gives a Found without State.
func (d Dir) Latest() (*Found, error) {
	found := &Found{}
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return found, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoints in %s: %w", d.Path, err)
	}
	var rounds []int
	for _, e := range entries {
		if r, ok := roundOf(e.Name()); ok {
			rounds = append(rounds, r)
		}
	}
	slices.Sort(rounds)
	for i := len(rounds) - 1; i >= 0; i-- {
		path := filepath.Join(d.Path, FileName(rounds[i]))
		raw, s, err := read(path)
		if err != nil {
			found.Skipped = append(found.Skipped, Skipped{Path: path, Reason: err.Error()})
			continue
		}
		if s.Round != rounds[i] {
			found.Skipped = append(found.Skipped, Skipped{Path: path, Reason: fmt.Sprintf("holds round %d, not the round of its name", s.Round)})
			continue
		}
		found.State, found.Path, found.Raw = s, path, raw
		break
	}
	return found, nil
}

func read(path string) ([]byte, *State, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	s, err := Decode(raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, s, nil
}

// Remove deletes the folder and every checkpoint in it: once the model is published, the run it
// would resume is complete.
func (d Dir) Remove() error {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := roundOf(e.Name()); !ok && !strings.HasPrefix(e.Name(), "."+filePrefix) {
			// Not ours: leave the folder and everything in it.
			return fmt.Errorf("checkpoint folder %s holds %s, which the trainer did not write: left in place", d.Path, e.Name())
		}
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(d.Path, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(d.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
