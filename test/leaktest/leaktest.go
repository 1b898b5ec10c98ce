// Package leaktest finds the processes a test run left running, independently of the code under
// test: the test gives what it starts a unique environment variable (a Mark) and the check scans
// /proc for live processes whose environment or command line carries it. Every process inherits
// its parent's environment unless it clears it, so a helper that a step started, which left the
// step's process group and was never recorded, is still found.
//
// Which processes exist and which still run comes from procgroup (PIDs, Alive), the one reader of
// /proc process state; what does not depend on the code under test is how a leak is recognised,
// by the mark rather than by any group or pid that code recorded.
package leaktest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
)

// Var is the environment variable a Mark sets.
const Var = "LEAKTEST_MARK"

// Mark is one test run's marker.
type Mark string

// New returns a marker no other run shares.
func New() Mark {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return Mark("run-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b))
}

// Env is the environment entry VAR=mark to give the processes a test starts.
func (m Mark) Env() string { return Var + "=" + string(m) }

// Proc is a live process that carries a mark.
type Proc struct {
	PID     int
	Cmdline string
}

func (p Proc) String() string { return fmt.Sprintf("pid %d (%s)", p.PID, p.Cmdline) }

// Processes are the live processes other than this one whose environment holds m.Env() or whose
// command line mentions m. Zombies do not count: they run nothing (their environment is gone
// too) and vanish when their parent reaps them.
func (m Mark) Processes() []Proc {
	env := []byte(m.Env())
	var out []Proc
	for _, pid := range procgroup.PIDs() {
		if pid == os.Getpid() || !procgroup.Alive(pid) {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid)
		environ, _ := os.ReadFile(dir + "/environ")
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		found := false
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if bytes.Equal(kv, env) {
				found = true
			}
		}
		if found || bytes.Contains(cmdline, []byte(m)) {
			out = append(out, Proc{PID: pid, Cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
		}
	}
	return out
}
