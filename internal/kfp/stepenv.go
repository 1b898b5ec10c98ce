package kfp

import (
	"os"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
)

// The environment the local pipeline runner gives every step; KFP sets none of it, so on a
// cluster the components act on Kubernetes.
const (
	// EnvBackend is "local" for the components' local backends (a local gang, a local runtime).
	EnvBackend = "GANGBOOST_BACKEND"
	// EnvBinDir names the folder holding gangboost-train and gangboost-runtime (repodir.BinDir).
	EnvBinDir = repodir.EnvBinDir
	// EnvLocalState names the folder where a step records the processes that outlive it.
	EnvLocalState = "GANGBOOST_LOCAL_STATE"
)

// LocalBackend reports whether the step runs on the local backends (EnvBackend=local).
func LocalBackend() bool { return os.Getenv(EnvBackend) == "local" }
