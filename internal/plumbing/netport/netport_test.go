package netport

import (
	"net"
	"strconv"
	"testing"
)

// Ports come from outside the kernel's ephemeral range, so no outgoing connection or
// ":0" listener elsewhere on the machine can take them before the servers bind them.
func TestPickAvoidsTheEphemeralRange(t *testing.T) {
	lo, hi, err := ephemeralRange()
	if err != nil {
		t.Skipf("no ephemeral port range to avoid on this machine: %v", err)
	}
	for range 20 {
		p, err := Pick(true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo && p <= hi || p+1 >= lo && p+1 <= hi {
			t.Fatalf("Pick = %d: ports %d and %d fall in the ephemeral range [%d, %d]", p, p, p+1, lo, hi)
		}
		for _, q := range []int{p, p + 1} {
			ln, err := net.Listen("tcp", ":"+strconv.Itoa(q))
			if err != nil {
				t.Fatalf("Pick = %d, but %d does not bind: %v", p, q, err)
			}
			ln.Close()
		}
	}
	taken := map[int]bool{}
	for range 50 {
		p, err := Pick(true, func(q int) bool { return taken[q] })
		if err != nil {
			t.Fatal(err)
		}
		if taken[p] || taken[p+1] {
			t.Fatalf("Pick = %d, a port already taken", p)
		}
		taken[p], taken[p+1] = true, true
	}
}

func TestSetNeverHandsOutAPortTwice(t *testing.T) {
	var s Set
	seen := map[int]bool{}
	for range 50 {
		p, err := s.Pick()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] || seen[p+1] {
			t.Fatalf("Set.Pick = %d, which (or whose successor) it handed out before", p)
		}
		seen[p], seen[p+1] = true, true
	}
}

func TestFree(t *testing.T) {
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("Free = %d, which does not bind: %v", p, err)
	}
	ln.Close()
}
