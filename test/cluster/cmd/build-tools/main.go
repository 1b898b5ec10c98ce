// Command build-tools builds the test control plane's binaries into the
// cache (see package cluster) and prints where they are; a no-op when the
// cache is current.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/gangboost/gangboost/test/cluster"
)

func main() {
	bins, reports, err := cluster.EnsureTools(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, r := range reports {
		state := "cached"
		if !r.Cached {
			state = "built in " + r.Duration.Round(1e9).String()
		}
		fmt.Printf("%-12s %s (%s)\n", r.Tool, r.Dir, state)
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Printf("  %-24s %s\n", n, bins[n])
	}
}
