package kfp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// RunComponent is a component binary's main. It parses --executor-input (KFP's {{$}}, the one
// argument component.yaml passes) and the flags extra adds, and runs the component with a context
// that SIGINT or SIGTERM (the kubelet stopping the pod) cancels. It returns the exit code: 0, 1
// when run fails (its error on stderr, prefixed with name), 2 for a usage error.
func RunComponent(name string, args []string, extra func(*flag.FlagSet), run func(ctx context.Context, e *Executor) error) int {
	return runComponent(name, args, os.Stderr, extra, run)
}

func runComponent(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet), run func(ctx context.Context, e *Executor) error) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	executorInput := fs.String("executor-input", "", "the ExecutorInput as protojson (KFP's {{$}})")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help asked for the usage; it is not a mistake
		}
		return 2
	}
	if *executorInput == "" {
		fmt.Fprintf(stderr, "%s: --executor-input is required (component.yaml passes {{$}})\n", name)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := ParseExecutorInput([]byte(*executorInput))
	if err == nil {
		err = run(ctx, e)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
