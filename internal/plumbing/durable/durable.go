// Package durable makes a change to a folder survive a crash: a file created, renamed or removed
// in it is on disk only once the folder itself is synced, not just the file.
package durable

import (
	"fmt"
	"os"
)

// SyncDir syncs dir, so that the entries created, renamed or removed in it so far stay after a
// crash.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
