package claim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// TopDirs are the claim's top-level folders, each written by the steps and the pods that run as
// the images' user.
var TopDirs = []string{DatasetsDir, ModelsDir, CheckpointsDir, ServingDir}

// ImageUID and ImageGID are the user and group the gangboost images run as (nonroot).
const (
	ImageUID = 65532
	ImageGID = 65532
)

// InitCommand is what makes a claim writable for the steps, as a message tells it.
const InitCommand = "kubectl apply -n <namespace> -f manifests/claim-init.yaml (a one-shot Job, as root, that creates " +
	"datasets/, models/, checkpoints/ and serving/ on the claim owned by 65532:65532; edit its claimName first), " +
	"or gangboost-components claim-init --claim <mount path> as root where the claim is mounted"

// NotWritableError is a claim folder this process may not write.
type NotWritableError struct {
	Dir                string
	UID, GID           int
	OwnerUID, OwnerGID uint32
	Mode               fs.FileMode
	Err                error
}

func (e *NotWritableError) Error() string {
	return fmt.Sprintf("the claim is not writable here: %s is owned by %d:%d with mode %s, and this step runs as %d:%d (%v). "+
		"Storage classes that ignore fsGroup (NFS, Filestore exports) hand out a root-owned volume: make the claim writable once with %s",
		e.Dir, e.OwnerUID, e.OwnerGID, e.Mode.Perm(), e.UID, e.GID, e.Err, InitCommand)
}

func (e *NotWritableError) Unwrap() error { return e.Err }

// CheckWritable makes sure this process may create top, a top-level folder of the claim seen at
// root, and files in it: it writes and removes a file in top, or where top does not exist yet in
// the nearest folder above it that does, so the check leaves nothing behind. A refusal is a
// *NotWritableError naming the folder, its owner and mode, this process's ids and the command that
// fixes it, before a step spends any time.
func CheckWritable(root, top string) error {
	dir, err := Join(root, top)
	if err != nil {
		return err
	}
	at := dir
	for {
		st, err := os.Stat(at)
		if err == nil && st.IsDir() {
			break
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(at)
		if parent == at {
			return fmt.Errorf("claim folder %s: no folder of its path exists", root)
		}
		at = parent
	}
	f, err := os.CreateTemp(at, ".gangboost-write-check-")
	if err != nil {
		if !errors.Is(err, fs.ErrPermission) {
			return err
		}
		e := &NotWritableError{Dir: at, UID: os.Geteuid(), GID: os.Getegid(), Err: err}
		if st, serr := os.Stat(at); serr == nil {
			e.Mode = st.Mode()
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				e.OwnerUID, e.OwnerGID = sys.Uid, sys.Gid
			}
		}
		return e
	}
	f.Close()
	return os.Remove(f.Name())
}

// Init makes the claim seen at root writable for uid:gid: each top-level folder is created where
// missing and given to uid:gid with mode 2775 (group-writable, new entries inherit the group).
// Only the top-level folders change: what is in them, and the root, stay as they are. It needs
// to run as root (or as the folders' owner).
func Init(root string, uid, gid int) ([]string, error) {
	if st, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("claim folder: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("claim folder %s is not a folder", root)
	}
	var done []string
	for _, top := range TopDirs {
		dir := filepath.Join(root, top)
		if err := os.Mkdir(dir, 0o775); err != nil && !errors.Is(err, fs.ErrExist) {
			return done, err
		}
		if st, err := os.Lstat(dir); err != nil {
			return done, err
		} else if !st.IsDir() {
			return done, fmt.Errorf("%s exists and is not a folder (%s): move it away first", dir, st.Mode().Type())
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return done, fmt.Errorf("give %s to %d:%d: %w (claim-init runs as root)", dir, uid, gid, err)
		}
		if err := os.Chmod(dir, 0o775|fs.ModeSetgid); err != nil {
			return done, err
		}
		done = append(done, dir)
	}
	return done, nil
}
