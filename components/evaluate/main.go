// Command evaluate is the KFP component that sends the test set to a V2 inference endpoint (JSON
// and binary tensors), and outputs accuracy, log loss and a confusion matrix (or RMSE), the
// latency of its calls and an HTML report; it fails when the served model disagrees with the
// trainer's own evaluation. See component.yaml for the inputs.
package main

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/evaluate"
)

// image is the gangboost image component.yaml runs.
var image = version.Image("gangboost")

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	return kfp.RunComponent("evaluate", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return evaluate.RunExecutor(ctx, e, os.Stdout)
	})
}
