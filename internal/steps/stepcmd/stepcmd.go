// Package stepcmd is the pipeline components' command lines: each component's flags and wiring
// (which backend, found where) as a function of its arguments, and the dispatch by the name a
// binary is called by, so that one binary is every component.
//
// The gangboost image ships that one binary (gangboost-components) with a link per component
// named as component.yaml's command: five binaries would each carry their own copy of the
// Kubernetes client libraries.
package stepcmd

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gangboost/gangboost/internal/contract/version"
)

// Image is the gangboost image: every component.yaml runs it, and the trainer pods default to it.
var Image = version.Image("gangboost")

// Name is the binary that is every component.
const Name = "gangboost-components"

// Commands are the components by the command their component.yaml runs; each takes its
// arguments (without the command) and returns the exit code.
var Commands = map[string]func(args []string) int{
	"launch-xgboostjob":       Launch,
	"deploy-inferenceservice": Deploy,
	"evaluate":                Evaluate,
	"prepare-data":            Prepare,
	"promote-model":           Promote,
}

// Main runs the component argv[0] names (its base name: a link named as the component), or,
// when the binary is called by another name, the one argv[1] names. It returns the exit code.
func Main(argv []string, stderr io.Writer) int {
	if len(argv) == 0 {
		return usage(stderr, "no command name")
	}
	if run, ok := Commands[filepath.Base(argv[0])]; ok {
		return run(argv[1:])
	}
	if len(argv) < 2 {
		return usage(stderr, "no component named")
	}
	switch argv[1] {
	case "-h", "-help", "--help", "help":
		usage(stderr, "")
		return 0
	}
	if run, ok := Commands[argv[1]]; ok {
		return run(argv[2:])
	}
	if run, ok := Tools[argv[1]]; ok {
		return run(argv[2:])
	}
	return usage(stderr, fmt.Sprintf("no component %q", argv[1]))
}

// Names are the components' commands, sorted.
func Names() []string {
	names := make([]string, 0, len(Commands))
	for n := range Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// usage says how to call the binary, after what was wrong (when why is set), and returns 2.
func usage(w io.Writer, why string) int {
	if why != "" {
		fmt.Fprintf(w, "%s: %s\n", Name, why)
	}
	fmt.Fprintf(w, "usage: %s <component> [flags], or call it through a link named as the component\ncomponents: %s\nother commands: claim-init (make a claim writable for the steps, as root)\n",
		Name, strings.Join(Names(), ", "))
	return 2
}
