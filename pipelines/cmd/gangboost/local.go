package main

import (
	"context"
	"fmt"
	"os"
)

// runLocal runs a pipeline package on this machine (gangboost pipeline run --local FILE). args are
// the run command's arguments, --local included.
func runLocal(ctx context.Context, args []string) int {
	fmt.Fprintln(os.Stderr, "gangboost pipeline run --local: not built yet")
	return 2
}
