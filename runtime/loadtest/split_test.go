package loadtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// split runs scripts/loadtest-lib.sh's split_cores for server cores p on a machine of ncpu
// logical CPUs whose hyperthread siblings are siblings[cpu] (the kernel's list format; none:
// the kernel says nothing), and returns its server_cpus, load_cpus, load_threads and split.
func split(t *testing.T, ncpu, p int, siblings map[int]string) (server, load, threads, words string) {
	t.Helper()
	sysfs := t.TempDir()
	for cpu, list := range siblings {
		dir := filepath.Join(sysfs, fmt.Sprintf("cpu%d", cpu), "topology")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "thread_siblings_list"), []byte(list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := filepath.Abs(filepath.Join("..", "..", "scripts", "loadtest-lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// The library makes a work folder and removes it on exit; nproc is the pretended machine's.
	script := fmt.Sprintf(`set -euo pipefail
die() { echo "$*" >&2; exit 1; }
. %q
nproc() { echo %d; }
split_cores %d
printf '%%s\n' "$server_cpus" "$load_cpus" "$load_threads" "$split"`, lib, ncpu, p)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "LOADTEST_CPU_SYSFS="+sysfs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("split_cores %d on %d CPUs: %v\n%s", p, ncpu, err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("split_cores printed %q", out)
	}
	return lines[0], lines[1], lines[2], lines[3]
}

func TestSplitCores(t *testing.T) {
	// Sixteen CPUs as Linux numbers an 8-core machine with hyperthreads: cpu i and i+8 share a core.
	apart := map[int]string{}
	for i := range 8 {
		apart[i], apart[i+8] = fmt.Sprintf("%d,%d", i, i+8), fmt.Sprintf("%d,%d", i, i+8)
	}
	// The same with neighbours sharing a core, in the range format: cpu 2k and 2k+1.
	adjacent := map[int]string{}
	for i := 0; i < 16; i += 2 {
		adjacent[i], adjacent[i+1] = fmt.Sprintf("%d-%d", i, i+1), fmt.Sprintf("%d-%d", i, i+1)
	}
	for _, tc := range []struct {
		name                           string
		ncpu, p                        int
		siblings                       map[int]string
		server, load, threads, inWords string
	}{
		{"2-core VM, one server core", 2, 1, nil, "0", "1", "1", "load generator on cores 1"},
		{"2-core VM, both cores", 2, 2, nil, "0,1", "1", "1", "shared: no core is left"},
		{"no topology, 16 CPUs", 16, 2, nil, "0,1", "2,3,4,5,6,7,8,9,10,11,12,13,14,15", "14", "load generator on cores 2,"},
		{"siblings i and i+8, one core", 16, 1, apart, "0", "1,2,3,4,5,6,7,9,10,11,12,13,14,15", "14", "idle: 8, the server cores' hyperthread siblings"},
		{"siblings i and i+8, two cores", 16, 2, apart, "0,1", "2,3,4,5,6,7,10,11,12,13,14,15", "12", "idle: 8,9"},
		{"adjacent siblings, two cores", 16, 2, adjacent, "0,2", "4,5,6,7,8,9,10,11,12,13,14,15", "12", "idle: 1,3"},
		{"adjacent siblings, every physical core", 16, 8, adjacent, "0,2,4,6,8,10,12,14", "1,3,5,7,9,11,13,15", "8", "no other core is left"},
		{"adjacent siblings, more than the physical cores", 16, 9, adjacent, "0,1,2,4,6,8,10,12,14", "3,5,7,9,11,13,15", "7", "no other core is left"},
		{"every CPU", 16, 16, apart, "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", "15", "1", "shared: no core is left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, load, threads, words := split(t, tc.ncpu, tc.p, tc.siblings)
			if server != tc.server || load != tc.load || threads != tc.threads {
				t.Errorf("server %q, load %q on %s threads; want server %q, load %q on %s", server, load, threads, tc.server, tc.load, tc.threads)
			}
			if !strings.Contains(words, tc.inWords) {
				t.Errorf("split %q does not say %q", words, tc.inWords)
			}
		})
	}
}
