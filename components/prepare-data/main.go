// Command prepare-data is the KFP component that splits a data set (the built-in Iris, or a CSV on
// the claim, on disk or at an http(s) URL) into datasets/<name>/train.csv, test.csv and
// schema.json on the claim, and outputs their paths, the label and a Dataset artifact. See
// component.yaml for the inputs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/prepare"
	"github.com/gangboost/gangboost/internal/version"
)

// image is the gangboost image component.yaml runs.
var image = version.Image("gangboost")

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("prepare-data", flag.ContinueOnError)
	executorInput := fs.String("executor-input", "", "the ExecutorInput as protojson (KFP's {{$}})")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *executorInput == "" {
		fmt.Fprintln(os.Stderr, "prepare-data: --executor-input is required (component.yaml passes {{$}})")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := kfp.ParseExecutorInput([]byte(*executorInput))
	if err == nil {
		err = prepare.RunExecutor(ctx, e, prepare.HTTPFetcher{}, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "prepare-data: %v\n", err)
		return 1
	}
	return 0
}
