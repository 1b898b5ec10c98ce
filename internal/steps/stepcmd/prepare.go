package stepcmd

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/prepare"
)

// Prepare is prepare-data: it splits a data set into train.csv, test.csv and schema.json on the
// claim and outputs their paths, the label and a Dataset artifact.
func Prepare(args []string) int {
	return kfp.RunComponent("prepare-data", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return prepare.RunExecutor(ctx, e, prepare.HTTPFetcher{}, os.Stdout)
	})
}
