// Command evaluate is the KFP component that sends the test set to a V2 inference endpoint (JSON
// and binary tensors), and outputs accuracy, log loss and a confusion matrix (or RMSE), the
// latency of its calls and an HTML report; it fails when the served model disagrees with the
// trainer's own evaluation. See component.yaml for the inputs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gangboost/gangboost/internal/evaluate"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/version"
)

// image is the gangboost image component.yaml runs.
var image = version.Image("gangboost")

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	executorInput := fs.String("executor-input", "", "the ExecutorInput as protojson (KFP's {{$}})")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *executorInput == "" {
		fmt.Fprintln(os.Stderr, "evaluate: --executor-input is required (component.yaml passes {{$}})")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := kfp.ParseExecutorInput([]byte(*executorInput))
	if err == nil {
		err = evaluate.RunExecutor(ctx, e, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "evaluate: %v\n", err)
		return 1
	}
	return 0
}
