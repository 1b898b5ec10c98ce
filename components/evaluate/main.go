// Command evaluate is the KFP component that sends the test set to a V2 inference endpoint (JSON
// and binary tensors), and outputs accuracy, log loss and a confusion matrix (or RMSE), the
// latency of its calls and an HTML report; it fails when the served model disagrees with the
// trainer's own evaluation. See component.yaml for the inputs.
//
// make build and the gangboost image run it as gangboost-components called by this name (a link);
// this main is the same command, for go run.
package main

import (
	"os"

	"github.com/gangboost/gangboost/internal/steps/stepcmd"
)

// image is the gangboost image component.yaml runs.
var image = stepcmd.Image

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int { return stepcmd.Evaluate(args) }
