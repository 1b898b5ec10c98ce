package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/runtime/forest"
)

// CheckModelFolder checks a trained model folder on a claim the way a reader relies on it,
// without the trainer's code: metadata.json names a model file the folder holds, that file's
// sha256 is the one metadata.json records, and the runtime's evaluator loads it with the number
// of features and the objective metadata.json states. It returns the metadata, and every
// mismatch found, joined.
func CheckModelFolder(dir string) (*modeldir.Metadata, error) {
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	if md.ModelFile == "" || md.ModelFile != filepath.Base(md.ModelFile) {
		return md, fmt.Errorf("model folder %s: metadata.json names model file %q, want a plain name such as model.json", dir, md.ModelFile)
	}
	path := filepath.Join(dir, md.ModelFile)
	model, err := os.ReadFile(path)
	if err != nil {
		return md, fmt.Errorf("model folder %s: %w", dir, err)
	}
	var errs []error
	sum := sha256.Sum256(model)
	if got := hex.EncodeToString(sum[:]); got != md.ModelSHA256 {
		errs = append(errs, fmt.Errorf("%s has sha256 %s, metadata.json records %q", path, got, md.ModelSHA256))
	}
	m, err := forest.Parse(model)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s does not load: %w", path, err))
	} else {
		if m.NumFeatures() != md.NumFeatures {
			errs = append(errs, fmt.Errorf("%s has %d features, metadata.json says %d", path, m.NumFeatures(), md.NumFeatures))
		}
		if m.Objective() != md.Objective {
			errs = append(errs, fmt.Errorf("%s has objective %s, metadata.json says %s", path, m.Objective(), md.Objective))
		}
	}
	return md, errors.Join(errs...)
}
