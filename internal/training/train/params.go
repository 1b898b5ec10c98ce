package train

import "github.com/gangboost/gangboost/internal/training/trainflags"

// Params are the XGBoost training parameters, defined with the trainer's flags (package
// trainflags) so that the launcher checks them with the same rules before it creates a job.
type Params = trainflags.Params

// DefaultParams are XGBoost's defaults, with the hist tree method.
func DefaultParams() Params { return trainflags.DefaultParams() }
