package kfp

import (
	"fmt"
	"os"
	"path/filepath"
)

// The environment the local pipeline runner gives every step; KFP sets none of it, so on a
// cluster the components act on Kubernetes.
const (
	// EnvBackend is "local" for the components' local backends (a local gang, a local runtime).
	EnvBackend = "GANGBOOST_BACKEND"
	// EnvBinDir names the folder holding gangboost-train and gangboost-runtime.
	EnvBinDir = "GANGBOOST_BIN_DIR"
	// EnvLocalState names the folder where a step records the processes that outlive it.
	EnvLocalState = "GANGBOOST_LOCAL_STATE"
)

// LocalBackend reports whether the step runs on the local backends (EnvBackend=local).
func LocalBackend() bool { return os.Getenv(EnvBackend) == "local" }

// BinDir is the folder of the binaries a local backend starts: EnvBinDir, else this executable's
// folder (bin/ holds them all).
func BinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%s is not set and this executable's folder is unknown: %w", EnvBinDir, err)
	}
	return filepath.Dir(self), nil
}
