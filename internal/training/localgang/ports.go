package localgang

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// Ports handed to a gang are picked outside the kernel's ephemeral range. A port is only reserved
// here by checking that it binds and closing it again: the replica binds it later, after its
// process started and read its data. A port from the ephemeral range (what listening on ":0"
// returns) can meanwhile become the source port of any outgoing connection on the machine, or
// another ":0" listener such as libxgboost's peer links, and then the tracker cannot listen, rank
// 0 exits, and the other ranks wait for it for the whole --gang-start-timeout. The kernel assigns
// no port outside the ephemeral range on its own, so only a process that names the port can take it.
const (
	lowestPickedPort = 10000
	// ephemeralRangeFile holds the kernel's ephemeral range, "32768\t60999" by default.
	ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
)

// FreePort returns a port that is free on all interfaces (the tracker listens on all of them),
// outside the kernel's ephemeral range where the machine allows, and not in taken; with withNext,
// its successor is free and not taken too (the trainer's gang watch listens there).
func FreePort(withNext bool, taken func(port int) bool) (int, error) {
	lo, hi := pickRange()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if taken != nil && (taken(p) || withNext && taken(p+1)) {
			continue
		}
		if !bindable(p) || withNext && !bindable(p+1) {
			continue
		}
		return p, nil
	}
	return 0, fmt.Errorf("no free port found in 200 tries in [%d, %d)", lo, hi)
}

// pickRange is where FreePort looks: below the ephemeral range when there is room, or else
// above it.
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
