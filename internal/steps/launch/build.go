package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// OwnTrainerBuild asks the gangboost-train beside this executable what its libxgboost was built
// with (gangboost-train --build-info). launch-xgboostjob runs from the gangboost image, which holds
// that gangboost-train, so the answer is the default trainer image's; locally it is make build's
// bin/gangboost-train, the one the local backend runs. nil when there is none beside it.
func OwnTrainerBuild() (*TrainerBuild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	bin := filepath.Join(filepath.Dir(self), "gangboost-train")
	if _, err := os.Stat(bin); err != nil {
		return nil, nil
	}
	return TrainerBuildOf(bin)
}

// TrainerBuildOf runs bin --build-info.
func TrainerBuildOf(bin string) (*TrainerBuild, error) {
	out, err := exec.Command(bin, "--build-info").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --build-info: %w", bin, err)
	}
	var info struct {
		Version string `json:"libxgboost_version"`
		CUDA    bool   `json:"USE_CUDA"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("%s --build-info printed %q: %w", bin, out, err)
	}
	return &TrainerBuild{LibXGBoost: info.Version, CUDA: info.CUDA}, nil
}
