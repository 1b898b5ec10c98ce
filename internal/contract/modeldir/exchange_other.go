//go:build !linux

package modeldir

import "errors"

var errExchangeUnsupported = errors.New("atomic exchange not supported")

// exchange is Linux-only; elsewhere Publish renames the old folder aside.
func exchange(a, b string) error { return errExchangeUnsupported }

// renameNew is Linux-only as one step; elsewhere it checks and renames.
func renameNew(a, b string) error { return checkAndRename(a, b) }
