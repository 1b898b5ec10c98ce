package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	etcdDirPrefix = "gangboost-etcd-"
	ownerFile     = "owner.pid"
)

// writeOwner records the test process owning a run folder. The kernel
// kills the components of a test binary that dies (SIGKILL, go test
// -timeout), but their folders stay; the next Start removes folders whose
// owner is gone (etcd's lives in /dev/shm, that is memory).
func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

func sweepStale() {
	var dirs []string
	for _, pattern := range []string{
		filepath.Join(os.TempDir(), "gangboost-cluster-*"),
		filepath.Join("/dev/shm", etcdDirPrefix+"*"),
	} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH && len(sweepStaleNode(d)) == 0 {
			os.RemoveAll(d)
		}
	}
}
