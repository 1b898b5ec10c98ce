// Command deploy-inferenceservice is the KFP component that serves a trained model: it reads its
// ExecutorInput ({{$}}), creates or rolls out a KServe InferenceService for model_uri (server-side
// apply), waits until it is Ready while printing its progress, and writes url, external_url,
// grpc_address and model_name to its ExecutorOutput. On failure or at its deadline it prints
// why the service is not ready. With GANGBOOST_BACKEND=local it serves the model with a local
// gangboost-runtime process instead. See component.yaml for the inputs.
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

func run(args []string) int { return stepcmd.Deploy(args) }
