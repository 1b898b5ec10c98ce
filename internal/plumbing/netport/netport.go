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
package netport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
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
// gang watch listens on MASTER_PORT+1).
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
		return p, nil
	}
	return 0, fmt.Errorf("no free port found in %d tries in [%d, %d)", tries, lo, hi)
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
