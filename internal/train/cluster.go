package train

import "github.com/gangboost/gangboost/internal/gangenv"

// Cluster is where this process sits in a training gang, read from the environment the job
// controller injects (see package gangenv, which owns that contract).
type Cluster = gangenv.Cluster

// Contracts recognised by ClusterFromEnv.
const (
	SourceSingle           = gangenv.SourceSingle
	SourceTrainingOperator = gangenv.SourceTrainingOperator
	SourceTrainerV2        = gangenv.SourceTrainerV2
)

// ClusterFromEnv reads the gang's environment (gangenv.Read): the Training Operator v1 contract,
// Kubeflow Trainer v2's, or none for a single process.
func ClusterFromEnv(getenv func(string) string) (Cluster, error) { return gangenv.Read(getenv) }
