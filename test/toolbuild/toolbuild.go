// Package toolbuild is how the tests build the servers they take from upstream modules (the
// control plane's tools, MinIO): go build's arguments and environment for a binary that is only
// ever run, never debugged.
package toolbuild

import (
	"os"
	"strings"
)

// GCFlags are the compiler flags of every build: no debug information (-dwarf=false). The
// linker's -w would drop it, and writing it for every package of a cold build cost a tenth of
// that build's CPU (2026-12-06, the KWOK tool on a 2-core VM: 157 s with it, 140 s without, the
// mean of 2 and 3 builds). They are make's own (scripts/xgboost-flags.sh gcflags, which the test
// holds them to), so a tool's packages that the product's build or tests compiled with the same
// module versions are not compiled again. The code built is the same either way (the binary's
// recorded build settings name the flag), so a tool's cache stamp need not: a tool cached
// before stays current.
const GCFlags = "all=-dwarf=false"

// Args are go build's arguments (after "go") building pkgs into out, a file or a folder that
// ends in the path separator, with the linker flags ldflags (-s -w and any -X): paths trimmed,
// and GCFlags.
func Args(out, ldflags string, pkgs ...string) []string {
	return append([]string{"build", "-trimpath", "-gcflags=" + GCFlags, "-ldflags", ldflags, "-o", out}, pkgs...)
}

// Env is the environment of a go command in a tools module: no cgo, no go.work of the
// developer's, and -mod=mod, so that a fresh clone may fill go.sum entries that the module
// proxy serves differently.
func Env() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
}
