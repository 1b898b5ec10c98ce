// Command gangboost-components is every pipeline component in one binary: called through a link
// named launch-xgboostjob, deploy-inferenceservice, evaluate, prepare-data or promote-model (as component.yaml's
// command runs it) it is that component, and `gangboost-components <component> [flags]` runs
// one by name. The gangboost image ships it once rather than five binaries that would each
// carry the Kubernetes client libraries.
package main

import (
	"os"

	"github.com/gangboost/gangboost/internal/steps/stepcmd"
)

func main() {
	os.Exit(stepcmd.Main(os.Args, os.Stderr))
}
