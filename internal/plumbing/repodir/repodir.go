// Package repodir finds the gangboost checkout and the folder of its built binaries, for the
// local backends (which start gangboost-train and gangboost-runtime) and for the tests.
package repodir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// EnvBinDir names the folder holding gangboost's binaries (gangboost-train, gangboost-runtime,
	// the components); `make build` puts them in <repo>/bin.
	EnvBinDir = "GANGBOOST_BIN_DIR"
	// EnvRepo names the checkout, for a program or test that runs outside it.
	EnvRepo = "GANGBOOST_REPO"
)

// module is the first line of the checkout's go.mod.
const module = "module github.com/gangboost/gangboost"

// Root is the gangboost checkout: $GANGBOOST_REPO, else the nearest folder holding gangboost's
// go.mod above this program's folder (a binary `make build` put in <repo>/bin), else above the
// working directory (go test runs a test in its package's folder).
func Root() (string, error) {
	if r := os.Getenv(EnvRepo); r != "" {
		return filepath.Abs(r)
	}
	var tried []string
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			if r, ok := above(filepath.Dir(self)); ok {
				return r, nil
			}
			tried = append(tried, filepath.Dir(self))
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if r, ok := above(wd); ok {
			return r, nil
		}
		tried = append(tried, wd)
	}
	return "", fmt.Errorf("no gangboost checkout (a go.mod of %s) above %q; set %s to it", module[len("module "):], tried, EnvRepo)
}

func above(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && (bytes.HasPrefix(b, []byte(module+"\n")) || bytes.HasPrefix(b, []byte(module+"\r\n"))) {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// BinDir is the folder of gangboost's binaries: $GANGBOOST_BIN_DIR, else <repo>/bin (Root).
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return filepath.Abs(d)
	}
	root, err := Root()
	if err != nil {
		return "", fmt.Errorf("%s is not set, and %w", EnvBinDir, err)
	}
	return filepath.Join(root, "bin"), nil
}
