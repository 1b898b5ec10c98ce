//go:build !linux

package modeldir

import "errors"

var errExchangeUnsupported = errors.New("atomic exchange not supported")

// exchange is Linux-only; elsewhere Publish renames the old folder aside.
func exchange(a, b string) error { return errExchangeUnsupported }
