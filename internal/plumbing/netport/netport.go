// Package netport picks the TCP ports of the servers gangboost starts on this machine (the local
// gang's tracker, the local model server, the test cluster's components): free now, and outside
// the kernel's ephemeral range, so that nothing takes them before the server binds.
//
// A port is found free by binding it and closing it again: the server binds it later, after its
// process started. A port from the ephemeral range (what listening on ":0"
// returns) can meanwhile become the source port of any outgoing connection on the machine, or
// another ":0" listener such as libxgboost's peer links, and then the server cannot listen. The
// kernel assigns no port outside the ephemeral range on its own, so only a process that names the
// port can take it.
//
// Outside that range the processes that pick ports must not pick the same one: two test packages
// each starting servers, or a local gang and a local model server, may each find a port free and
// start a server on it, and the later bind fails. Pick therefore reserves every port it returns on
// the machine: a lock no other process's Pick can take until this process releases the port or
// exits (the kernel drops the lock however the process ends).
package netport

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

const (
	lowestPickedPort = 10000
	// ephemeralRangeFile holds the kernel's ephemeral range, "32768\t60999" by default.
	ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	tries              = 200
)

// Free returns a port free on all interfaces, outside the ephemeral range where the machine
// allows.
func Free() (int, error) { return Pick(false, nil) }

// Pick returns a port free on all interfaces, outside the ephemeral range where the machine
// allows, not in taken and not one a gang listens on by number (gangPorts); with withNext, its
// successor is all that too (the trainer's gang watch listens on MASTER_PORT+1). The port (and
// its successor) stays reserved on the machine until Release or this process's exit: until then
// no Pick returns it again, in this process or another.
func Pick(withNext bool, taken func(port int) bool) (int, error) {
	lo, hi := pickRange()
	for range tries {
		p := lo + rand.IntN(hi-lo)
		if !pickable(p, withNext, taken) {
			continue
		}
		if !bindable(p) || withNext && !bindable(p+1) {
			continue
		}
		if !machine.reserve(p) {
			continue
		}
		if withNext && !machine.reserve(p+1) {
			machine.release(p)
			continue
		}
		return p, nil
	}
	return 0, fmt.Errorf("no free port found in %d tries in [%d, %d)", tries, lo, hi)
}

// gangPorts are the ports in the picked range that gangboost's training gangs listen on by
// number, not by Pick. Where their pods share the machine's network (a test cluster's process
// nodes run every pod as a local process) a server on one of them, picked by another test, would
// take the gang's port: rank 0's gang watch of an XGBoostJob on the default MASTER_PORT 9999
// listens on 10000, and Kubeflow Trainer v2 fixes rank 0's tracker at 29500 (DMLC_TRACKER_PORT),
// its gang watch on 29501. TestGangPortsAreNeverPicked holds them to the constants they follow.
var gangPorts = []int{10000, 29500, 29501}

// pickable says whether Pick may try port p: neither it nor, withNext, its successor in taken or
// gangPorts.
func pickable(p int, withNext bool, taken func(port int) bool) bool {
	open := func(q int) bool { return (taken == nil || !taken(q)) && !slices.Contains(gangPorts, q) }
	return open(p) && (!withNext || open(p+1))
}

// Release ends this process's reservation of ports Pick returned, once their servers have ended
// (a bound port needs none: it does not bind for anyone else).
func Release(ports ...int) {
	for _, p := range ports {
		machine.release(p)
	}
}

// machine holds this process's reservations.
var machine = reservations{held: map[int]bool{}}

// reservations are ports this process holds as write locks on one byte each (the port's offset)
// of one file every picking process of the user opens. Unlike a file per port, nothing is left
// behind, and a lock dies with its process.
//
// The locks are POSIX record locks, which belong to the process, not the descriptor: closing any
// descriptor of the file drops them all, so only reservations opens it, once, and never closes
// it; and the process's own second lock of a byte succeeds, so held says what it holds.
type reservations struct {
	mu     sync.Mutex
	opened bool
	file   *os.File // nil where it could not be opened: ports are then held for this process alone
	held   map[int]bool
}

// reserve locks port's byte, and reports whether this process now holds it: never a port it
// holds already, so servers a process starts before any binds never share one. Where the file
// cannot be opened or locked (a read-only temporary folder, a file system without locks), the
// port is held for this process alone: the bind check then stands between processes, as it did
// before there were reservations.
func (r *reservations) reserve(port int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[port] {
		return false
	}
	if !r.opened {
		r.opened = true
		if f, err := os.OpenFile(lockPath(), os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			r.file = f // kept referenced for the process's life: a collected *os.File closes itself
		}
	}
	if r.file != nil {
		if err := r.lock(port, syscall.F_WRLCK); errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return false // another process holds it
		}
	}
	r.held[port] = true
	return true
}

func (r *reservations) release(port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[port] && r.file != nil {
		_ = r.lock(port, syscall.F_UNLCK)
	}
	delete(r.held, port)
}

// lockPath is the file every picking process of the user shares: in /tmp, the machine's shared
// temporary folder, rather than in $TMPDIR, which a process may have set to its own (the test
// cluster's pods each have one); $TMPDIR only where there is no /tmp.
func lockPath() string {
	dir := "/tmp"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	return filepath.Join(dir, fmt.Sprintf("gangboost-ports-%d.lock", os.Getuid()))
}

// lock sets (F_WRLCK) or drops (F_UNLCK) the lock on port's byte without waiting.
func (r *reservations) lock(port int, typ int16) error {
	lk := syscall.Flock_t{Type: typ, Whence: io.SeekStart, Start: int64(port), Len: 1}
	return syscall.FcntlFlock(r.file.Fd(), syscall.F_SETLK, &lk)
}

// pickRange is where Pick looks: below the ephemeral range when there is room, or else above it.
func pickRange() (lo, hi int) {
	elo, ehi, err := ephemeralRange()
	switch {
	case err != nil:
		return lowestPickedPort, 32768 // Linux's default ephemeral range starts at 32768
	case elo-lowestPickedPort >= 1000:
		return lowestPickedPort, elo - 1 // leaves room for withNext
	case 65535-ehi >= 1000:
		return ehi + 1, 65535
	default:
		return lowestPickedPort, 65535
	}
}

func ephemeralRange() (lo, hi int, err error) {
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ephemeralRangeFile, err)
	}
	if lo <= 0 || hi < lo || hi > 65535 {
		return 0, 0, errors.New(ephemeralRangeFile + ": not a port range")
	}
	return lo, hi, nil
}

func bindable(port int) bool {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
