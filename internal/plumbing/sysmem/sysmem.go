// Package sysmem tells how much memory this process may still take: the smaller of the kernel's
// MemAvailable and what the cgroup's memory limit leaves, so that a bound derived from it holds in
// a container (a pod's memory limit) as on a bare machine. It also reads and writes byte sizes
// the way flags take them ("512MiB", "8GiB").
package sysmem

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Available returns the bytes this process can still allocate before the kernel (or its cgroup)
// runs out: MemAvailable from /proc/meminfo, lowered to the cgroup's limit minus its usage when
// the process runs under a cgroup memory limit (v2 memory.max, or v1 memory.limit_in_bytes).
func Available() (uint64, error) { return available(os.ReadFile) }

func available(readFile func(string) ([]byte, error)) (uint64, error) {
	b, err := readFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("available memory: %w", err)
	}
	avail, err := memAvailable(string(b))
	if err != nil {
		return 0, err
	}
	if left, ok := cgroupLeft(readFile); ok && left < avail {
		avail = left
	}
	return avail, nil
}

// memAvailable reads "MemAvailable:  23750552 kB" from /proc/meminfo text.
func memAvailable(meminfo string) (uint64, error) {
	for _, line := range strings.Split(meminfo, "\n") {
		rest, ok := strings.CutPrefix(line, "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb * 1024, nil
	}
	return 0, errors.New("available memory: /proc/meminfo has no MemAvailable line in kB")
}

// cgroupLeft is the cgroup's memory limit minus its current usage, if the process has a limit.
// Only the cgroup mounted at /sys/fs/cgroup is read: that is the container's own in Kubernetes.
func cgroupLeft(readFile func(string) ([]byte, error)) (uint64, bool) {
	num := func(path string) (uint64, bool) {
		b, err := readFile(path)
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil // "max" (no limit) does not parse
	}
	for _, files := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},                                 // v2
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}, // v1
	} {
		limit, ok := num(files[0])
		// v1 writes "no limit" as a huge number (the largest page-aligned int64).
		if !ok || limit >= math.MaxInt64/2 {
			continue
		}
		used, _ := num(files[1])
		if used >= limit {
			return 0, true
		}
		return limit - used, true
	}
	return 0, false
}

var units = []struct {
	suffix string
	size   uint64
}{
	// Longest suffixes first, so "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseBytes reads a byte size: a whole number of bytes, optionally followed by a unit, binary
// (KiB, MiB, GiB, TiB) or decimal (KB, MB, GB, TB), e.g. "16MiB", "8GiB", "1.5GB", "1048576".
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.size
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("byte size %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	b := v * float64(mult)
	if b >= math.MaxUint64 {
		return 0, fmt.Errorf("byte size %q: too large", s)
	}
	return uint64(b), nil
}

// FormatBytes writes n in the largest binary unit that keeps it at least 1, with one decimal,
// e.g. "64 GiB", "1.5 MiB", "512 B".
func FormatBytes(n uint64) string {
	for _, u := range []struct {
		suffix string
		size   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			v := strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64)
			return strings.TrimSuffix(v, ".0") + " " + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + " B"
}
