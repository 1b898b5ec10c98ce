// Command prepare-data is the KFP component that splits a data set (the built-in Iris, or a CSV on
// the claim, on disk or at an http(s) URL) into datasets/<name>/train.csv, test.csv and
// schema.json on the claim, and outputs their paths, the label and a Dataset artifact. See
// component.yaml for the inputs.
//
// gangboost-components is this command too, called by this name (the gangboost image ships that
// one binary); this main builds it alone.
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
