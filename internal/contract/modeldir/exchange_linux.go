package modeldir

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errExchangeUnsupported says that the filesystem (or kernel) cannot exchange two names.
var errExchangeUnsupported = errors.New("atomic exchange not supported")

// exchange swaps the names a and b in one step (renameat2 RENAME_EXCHANGE, Linux 3.15+; not every
// filesystem implements it, e.g. some network filesystems answer EINVAL).
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errExchangeUnsupported
	}
	return err
}

// renameNew moves a to the new name b in one step, failing with an error that is os.ErrExist when
// b exists (renameat2 RENAME_NOREPLACE): of two publishers racing for one name, exactly one wins.
// Where the filesystem cannot, it checks and renames, which leaves a window between the two.
func renameNew(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return checkAndRename(a, b)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: err}
	}
	return nil
}
