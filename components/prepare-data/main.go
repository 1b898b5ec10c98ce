// Command prepare-data is the KFP component that splits a data set (the built-in Iris, or a CSV on
// the claim, on disk or at an http(s) URL) into datasets/<name>/train.csv, test.csv and
// schema.json on the claim, and outputs their paths, the label and a Dataset artifact. See
// component.yaml for the inputs.
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

func run(args []string) int { return stepcmd.Prepare(args) }
