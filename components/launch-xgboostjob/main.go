// Command launch-xgboostjob is the KFP component that trains a model as a gang-scheduled
// XGBoostJob: it reads its ExecutorInput ({{$}}), creates (or, on a retry, adopts) the job, prints
// its progress and why its gang waits, and writes the Model and Metrics artifacts, model_uri and
// job_name to its ExecutorOutput. See component.yaml for the inputs.
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

func run(args []string) int { return stepcmd.Launch(args) }
