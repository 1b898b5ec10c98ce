// Package netport picks the TCP ports of the servers gangboost starts on this machine (the local
// gang's tracker, the local model server, the test cluster's components): free now, and outside
// the kernel's ephemeral range, so that nothing takes them before the server binds.
//
// A port is only reserved by checking that it binds and closing it again: the server binds it
// later, after its process started. A port from the ephemeral range (what listening on ":0"
// returns) can meanwhile become the source port of any outgoing connection on the machine, or
// another ":0" listener such as libxgboost's peer links, and then the server cannot listen. The
// kernel assigns no port outside the ephemeral range on its own, so only a process that names the
// port can take it.
//
// Outside that range the processes that pick ports must not pick the same one: two test packages
// each starting servers, or a local gang and a local model server, may each find a port free and
// start a server on it, and the later bind fails. Pick therefore reserves every port it returns on
// the machine: an exclusive lock on a file named for the port, which no other process's Pick can
// take until this process releases the port or exits (the kernel drops the lock however it exits).
package netport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
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
// allows, and not in taken; with withNext, its successor is free and not taken too (the trainer's
// gang watch listens on MASTER_PORT+1). The port (and its successor) stays reserved on the machine
// until Release or this process's exit.
func Pick(withNext bool, taken func(port int) bool) (int, error) {
	lo, hi := pickRange()
	for range tries {
		p := lo + rand.IntN(hi-lo)
		if taken != nil && (taken(p) || withNext && taken(p+1)) {
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

// Release ends this process's reservation of ports Pick returned, once their servers have ended
// (a bound port needs none: it does not bind for anyone else).
func Release(ports ...int) {
	for _, p := range ports {
		machine.release(p)
	}
}

// machine holds this process's reservations.
var machine = reservations{held: map[int]*os.File{}}

// reservations are ports this process holds locked in a folder every picking process of the user
// shares.
type reservations struct {
	mu   sync.Mutex
	dir  string // "" until first used; "-" where no folder could be made, and nothing is reserved
	held map[int]*os.File
}

// reserve locks port's file, and reports whether this process now holds it. Where the folder
// cannot be made or written (a read-only temporary folder), it reserves nothing and answers true:
// the bind check alone then stands, as it did before there were reservations.
func (r *reservations) reserve(port int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[port] != nil {
		return false
	}
	if r.dir == "" {
		r.dir = filepath.Join(os.TempDir(), fmt.Sprintf("gangboost-ports-%d", os.Getuid()))
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			r.dir = "-"
		}
	}
	if r.dir == "-" {
		return true
	}
	path := filepath.Join(r.dir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false // another process holds it
	}
	// The holder before may have removed the file (release) between the open and the lock: the
	// lock is then on a file no one else will open, and a third process may hold the port's new
	// file. Only a lock on the file the path names now reserves the port.
	if !samePath(f, path) {
		f.Close()
		return false
	}
	r.held[port] = f // kept referenced: a collected *os.File closes its descriptor, dropping the lock
	return true
}

// release removes port's file and drops its lock (in that order, so a process that opened the
// file meanwhile finds it gone once it gets the lock). The folder so holds the files of ports held
// now, and those of processes that ended without releasing theirs, which the next Pick reuses.
func (r *reservations) release(port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.held[port]; f != nil {
		os.Remove(f.Name())
		f.Close()
		delete(r.held, port)
	}
}

// samePath reports whether path names the file f has open.
func samePath(f *os.File, path string) bool {
	open, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(path)
	return err == nil && os.SameFile(open, named)
}

// Set hands out ports it never hands out again, each with its successor free: servers that are
// all started before any binds (a test cluster's components) never get the same port.
type Set struct {
	mu   sync.Mutex
	used map[int]bool
}

// Pick returns a port (and its successor) that is free and that s has not handed out.
func (s *Set) Pick() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := Pick(true, func(p int) bool { return s.used[p] })
	if err != nil {
		return 0, err
	}
	if s.used == nil {
		s.used = map[int]bool{}
	}
	s.used[p], s.used[p+1] = true, true
	return p, nil
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
