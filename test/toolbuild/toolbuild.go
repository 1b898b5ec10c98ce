// Package toolbuild is how the tests build the servers they take from upstream modules (the
// control plane's tools, MinIO): go build's arguments and environment for a binary that is only
// ever run, never debugged.
package toolbuild

import (
	"os"
	"strings"
)

// Args are go build's arguments (after "go") building pkgs into out, a file or a folder that
// ends in the path separator, with the linker flags ldflags (-s -w and any -X). Paths are
// trimmed, and the compiler writes no debug information (-dwarf=false): the linker's -w would
// drop it, and writing it for every package of a cold build cost a tenth of that build's CPU
// (2026-12-06, the KWOK tool on a 2-core VM: 157 s with it, 140 s without, the mean of 2 and 3
// builds). The code built is the same either way (the binary's recorded build settings name the
// flag), so a tool's cache stamp need not: a tool cached before stays current.
func Args(out, ldflags string, pkgs ...string) []string {
	return append([]string{"build", "-trimpath", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", out}, pkgs...)
}

// Env is the environment of a go command in a tools module: no cgo, no go.work of the
// developer's, and -mod=mod, so that a fresh clone may fill go.sum entries that the module
// proxy serves differently.
func Env() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
}
