// Package modeldir is the model folder contract: what a folder such as <pvc>/models/<model>/<version>
// holds (one model file, model.json or model.ubj as the trainer writes it or any XGBoost model
// file a user brings, and metadata.json), how readers find the model file, how the trainer publishes
// one so that a reader sees the whole folder or none of it (PublishFolder, which prepare-data uses
// for data set folders too, and which replaces only a folder of the same Kind), and how readers
// read its metadata.
package modeldir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gangboost/gangboost/internal/plumbing/durable"
)

// MetadataFile is the name of the metadata file in a model folder.
const MetadataFile = "metadata.json"

// Model formats as XGBoost's save_model writes them.
const (
	FormatJSON = "json"
	FormatUBJ  = "ubj"
)

// ModelFileNames are the model file names a folder may hold, in the order a reader looks for them.
var ModelFileNames = []string{ModelFileName(FormatJSON), ModelFileName(FormatUBJ)}

// ModelFileName is the model's file name in a model folder for a format ("json" or "ubj").
func ModelFileName(format string) string { return "model." + format }

// Metadata describes a trained model; it is written next to the model file as metadata.json and
// read by the runtime and the pipeline components. The JSON names are the contract: never rename
// one.
type Metadata struct {
	ModelFile    string   `json:"model_file"`
	ModelSHA256  string   `json:"model_sha256"`
	Objective    string   `json:"objective"`
	NumFeatures  int      `json:"num_features"`
	FeatureNames []string `json:"feature_names,omitempty"`
	Label        string   `json:"label,omitempty"`
	Classes      []string `json:"classes,omitempty"`
	// Categories names the categories of the features that were text (a Parquet string column,
	// or a column prepare-data's schema.json names as categories): by feature name, the names in
	// code order. The model takes a category's code, its position in the list; a request names
	// a category by sending that code.
	Categories     map[string][]string  `json:"categories,omitempty"`
	NumClass       int                  `json:"num_class,omitempty"`
	Rounds         int                  `json:"rounds"`
	BestIteration  int                  `json:"best_iteration"`
	BestScore      *float64             `json:"best_score,omitempty"`
	Metrics        map[string][]float64 `json:"metrics"`
	Params         map[string]string    `json:"params"`
	XGBoostVersion string               `json:"xgboost_version"`
	WorldSize      int                  `json:"world_size"`
	TrainRows      int                  `json:"train_rows"`
	// Producer is who wrote the folder: the job's name (launch-xgboostjob passes it as
	// --producer), so a retried job may replace its own earlier output and nothing else.
	Producer string `json:"producer,omitempty"`
	// ResumedAt are the rounds training resumed at from checkpoints after its gang restarted,
	// oldest first; absent when it ran through.
	ResumedAt []int `json:"resumed_at,omitempty"`
}

// CheckModelFile reports whether md names its folder's model file and that file's sha256, which a
// reader needs to check the bytes it got: an error naming what is missing otherwise.
func (md *Metadata) CheckModelFile() error {
	if md.ModelFile == "" || strings.Contains(md.ModelFile, "/") || md.ModelFile == MetadataFile || md.ModelSHA256 == "" {
		return fmt.Errorf("%s names no model file and sha256 (model_file %q, model_sha256 %q)", MetadataFile, md.ModelFile, md.ModelSHA256)
	}
	return nil
}

// ReadMetadata reads a model folder's metadata.json.
func ReadMetadata(dir string) (*Metadata, error) {
	path := filepath.Join(dir, MetadataFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var md Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &md, nil
}

// writeFile writes one file of a folder being published; tests replace it to fail a write the
// way a full disk does.
var writeFile = writeSynced

// exchangeNames swaps two names atomically; tests replace it to take the path of filesystems
// without RENAME_EXCHANGE.
var exchangeNames = exchange

// Publish makes dir hold exactly the model (as modelFile, e.g. "model.json") and md, whose
// ModelFile and ModelSHA256 it sets: a reader, or a crash at any moment, sees the old folder or
// the new one whole, never a model without its metadata. With replace it swaps an existing model
// folder for the new one (PublishFolder); without, an existing folder is left as it is and the
// result is an *ExistsError (PublishNewFolder): a model version something may be serving is never
// replaced by accident, even by a publisher that raced for the same name.
func Publish(dir, modelFile string, model []byte, md *Metadata, replace bool) error {
	if modelFile == "" || modelFile != filepath.Base(modelFile) || modelFile == MetadataFile {
		return fmt.Errorf("publish model folder %s: model file name %q: want a plain name such as model.json", dir, modelFile)
	}
	dir = filepath.Clean(dir)
	sum := sha256.Sum256(model)
	md.ModelFile, md.ModelSHA256 = modelFile, hex.EncodeToString(sum[:])
	js, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return fmt.Errorf("publish model folder %s: %w", dir, err)
	}
	files := []File{{modelFile, model}, {MetadataFile, append(js, '\n')}}
	if replace {
		err = PublishFolder(dir, ModelFolder, files)
	} else {
		err = PublishNewFolder(dir, ModelFolder, files)
	}
	var exists *ExistsError
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("publish model folder %s: %w", dir, err)
	}
	return err
}

// ExistsError is a model folder that exists where a new one was to be published without
// replacing anything.
type ExistsError struct {
	Dir string
	// Producer is who wrote the existing folder (its metadata's producer), "" when unknown.
	Producer string
}

func (e *ExistsError) Error() string {
	by := ""
	if e.Producer != "" {
		by = " (written by " + e.Producer + ")"
	}
	return fmt.Sprintf("model folder %s exists%s: a published model version is never replaced; train into another version (model_version), or replace it on purpose with overwrite", e.Dir, by)
}

// CheckNew reports whether a model may be published at dir without replacing one: nil when dir
// does not exist, or when it holds a model whose metadata names producer (non-empty) as its
// writer (own is then true: an earlier attempt of the same job, which may replace its own
// output); an *ExistsError otherwise.
func CheckNew(dir, producer string) (own bool, err error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	md, err := ReadMetadata(dir)
	if err != nil {
		// A folder without readable metadata is no published model, but it is not ours to
		// replace either.
		return false, &ExistsError{Dir: dir}
	}
	if producer != "" && md.Producer == producer {
		return true, nil
	}
	return false, &ExistsError{Dir: dir, Producer: md.Producer}
}

// File is one file of a folder PublishFolder writes.
type File struct {
	Name string
	Data []byte
}

// Kind is what a published folder is, told by the names it may hold. PublishFolder swaps out an
// existing folder only when it is recognisably one of its kind, so that a destination given by
// mistake (models/ itself, a model's folder of versions, a working folder, the claim's parent) is
// refused instead of deleted with everything in it.
type Kind struct {
	// Name says what the folder is in messages, e.g. "model folder".
	Name string
	// Holds reports whether a file of this name belongs in such a folder.
	Holds func(name string) bool
}

// ModelFolder is a model folder as the trainer writes it: model.json or model.ubj (so a re-run in
// the other format replaces it) and metadata.json. Anything else, even another model file a user
// brought, is not the trainer's to delete.
var ModelFolder = Kind{Name: "model folder", Holds: func(name string) bool {
	return name == MetadataFile || slices.Contains(ModelFileNames, name)
}}

// maxListed bounds the names an error lists.
const maxListed = 5

// CheckReplaceable reports whether PublishFolder may publish a folder of kind at dir: dir does
// not exist, or it is a folder (not a link to one) holding only files kind.Holds accepts, and no
// sub-folders. Publishing deletes the previous folder, so anything else in it would be lost.
func CheckReplaceable(dir string, kind Kind) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a folder (%s): publishing a %s there would replace it; give a folder of its own", dir, st.Mode().Type(), kind.Name)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var foreign []string
	for _, e := range entries {
		if e.IsDir() || !kind.Holds(e.Name()) {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			foreign = append(foreign, name)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	listed := foreign
	if len(listed) > maxListed {
		listed = append(listed[:maxListed:maxListed], fmt.Sprintf("and %d more", len(foreign)-maxListed))
	}
	return fmt.Errorf("%s is not a %s: it holds %s; publishing replaces the whole folder and would delete them: give a folder of its own (e.g. <claim>/models/<model>/<version>), or move them away",
		dir, kind.Name, strings.Join(listed, ", "))
}

// PublishFolder makes dir hold exactly files, a folder of kind. They are written into a temporary
// folder beside dir (same parent, so same filesystem), synced, and the folder is renamed into
// place: a reader, or a crash at any moment, sees the old folder or the new one whole. An existing
// dir (a re-run) is swapped for the new one in one step (renameat2 RENAME_EXCHANGE) where the
// filesystem supports it, and then removed; so an existing dir must be one of kind
// (CheckReplaceable), or nothing is written. The folder is 0755: readers (the runtime, trainer
// pods) may run as another user.
func PublishFolder(dir string, kind Kind, files []File) error {
	return publishFolder(dir, kind, files, true)
}

// PublishNewFolder is PublishFolder for a dir that must not exist: one that does is left
// untouched and the result is an *ExistsError, also when another publisher created it while
// this one wrote (the final rename never replaces: renameat2 RENAME_NOREPLACE).
func PublishNewFolder(dir string, kind Kind, files []File) error {
	return publishFolder(dir, kind, files, false)
}

func publishFolder(dir string, kind Kind, files []File, replace bool) (err error) {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	for _, f := range files {
		if f.Name == "" || f.Name != filepath.Base(f.Name) || !kind.Holds(f.Name) {
			return fmt.Errorf("file name %q: want a plain name of a %s", f.Name, kind.Name)
		}
	}
	if !replace {
		if _, err := os.Lstat(dir); err == nil {
			return existsError(dir)
		}
	} else if err := CheckReplaceable(dir, kind); err != nil {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	for _, f := range files {
		if err := writeFile(filepath.Join(tmp, f.Name), f.Data); err != nil {
			return err
		}
	}
	// MkdirTemp makes the folder private (0700).
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := durable.SyncDir(tmp); err != nil {
		return err
	}
	if !replace {
		if err := renameNew(tmp, dir); errors.Is(err, os.ErrExist) {
			return existsError(dir)
		} else if err != nil {
			return err
		}
	} else if err := swapIn(tmp, dir); err != nil {
		return err
	}
	// The rename is durable only once the parent folder's entry is.
	return durable.SyncDir(parent)
}

// swapIn moves the complete folder tmp to dir. When dir exists, the two are exchanged atomically
// where the filesystem can (Linux renameat2 RENAME_EXCHANGE); elsewhere the old folder is renamed
// aside first, which leaves a moment without dir but never a partial one. The old folder is then
// removed.
func swapIn(tmp, dir string) error {
	err := os.Rename(tmp, dir)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(dir); serr != nil {
		return err // dir does not exist: the rename failed for another reason
	}
	old := tmp // after an exchange, tmp holds the old folder
	if xerr := exchangeNames(tmp, dir); xerr != nil {
		if !errors.Is(xerr, errExchangeUnsupported) {
			return xerr
		}
		aside, aerr := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".old-")
		if aerr != nil {
			return aerr
		}
		// MkdirTemp picked an unused name; os.Rename will not replace even an empty folder.
		os.Remove(aside)
		if err := os.Rename(dir, aside); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			// Put the old folder back rather than leave no folder at all.
			if rerr := os.Rename(aside, dir); rerr != nil {
				return fmt.Errorf("%w (and restoring the previous folder from %s failed: %v)", err, aside, rerr)
			}
			return err
		}
		old = aside
	}
	// The new folder is in place; a failure to remove the old one is not the publisher's failure.
	_ = os.RemoveAll(old)
	return nil
}

// writeSynced writes data to path (a new file) and syncs it to disk.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// checkAndRename renames a to b unless b exists.
func checkAndRename(a, b string) error {
	if _, err := os.Lstat(b); err == nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: os.ErrExist}
	}
	return os.Rename(a, b)
}

// existsError describes the existing folder at dir, naming its producer where its metadata says.
func existsError(dir string) *ExistsError {
	e := &ExistsError{Dir: dir}
	if md, err := ReadMetadata(dir); err == nil {
		e.Producer = md.Producer
	}
	return e
}
