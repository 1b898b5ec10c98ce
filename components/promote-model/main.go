// Command promote-model is the KFP component that applies evaluate's champion/challenger verdict
// to the InferenceService the run deployed into: it promotes the challenger without restarting
// its pods, or removes it and leaves the champion serving, and records the model it replaced.
// See component.yaml for the inputs.
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

func run(args []string) int { return stepcmd.Promote(args) }
