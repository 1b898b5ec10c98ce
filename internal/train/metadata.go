package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Metadata describes a trained model; it is written next to the model file as metadata.json and
// read by the runtime and the pipeline components.
type Metadata struct {
	ModelFile      string               `json:"model_file"`
	ModelSHA256    string               `json:"model_sha256"`
	Objective      string               `json:"objective"`
	NumFeatures    int                  `json:"num_features"`
	FeatureNames   []string             `json:"feature_names,omitempty"`
	Label          string               `json:"label,omitempty"`
	Classes        []string             `json:"classes,omitempty"`
	NumClass       int                  `json:"num_class,omitempty"`
	Rounds         int                  `json:"rounds"`
	BestIteration  int                  `json:"best_iteration"`
	BestScore      *float64             `json:"best_score,omitempty"`
	Metrics        map[string][]float64 `json:"metrics"`
	Params         map[string]string    `json:"params"`
	XGBoostVersion string               `json:"xgboost_version"`
	WorldSize      int                  `json:"world_size"`
	TrainRows      int                  `json:"train_rows"`
}

// ModelFileName is the model's file name in a model folder for a format ("json" or "ubj").
func ModelFileName(format string) string { return "model." + format }

// writeModel writes the model and its metadata into dir. Each file is written to a temporary name
// and renamed, model first, so a crash never leaves a partial file under a final name and
// metadata.json only appears once the model it describes is complete.
func writeModel(dir string, model []byte, md *Metadata) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create model folder: %w", err)
	}
	sum := sha256.Sum256(model)
	md.ModelSHA256 = hex.EncodeToString(sum[:])
	if err := writeAtomic(filepath.Join(dir, md.ModelFile), model); err != nil {
		return err
	}
	js, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "metadata.json"), append(js, '\n'))
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadMetadata reads a model folder's metadata.json.
func ReadMetadata(dir string) (*Metadata, error) {
	path := filepath.Join(dir, "metadata.json")
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
