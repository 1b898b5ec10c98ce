// Command prepare-data is the KFP component that splits a data set (the built-in Iris, or a CSV on
// the claim, on disk or at an http(s) URL) into datasets/<name>/train.csv, test.csv and
// schema.json on the claim, and outputs their paths, the label and a Dataset artifact. See
// component.yaml for the inputs.
package main

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/prepare"
)

// image is the gangboost image component.yaml runs.
var image = version.Image("gangboost")

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	return kfp.RunComponent("prepare-data", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return prepare.RunExecutor(ctx, e, prepare.HTTPFetcher{}, os.Stdout)
	})
}
