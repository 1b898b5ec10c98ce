package netport

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/internal/training/gangenv"
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

// A port a gang listens on by number (gangPorts) is never picked, nor the port before it where
// its successor is wanted: another test's server there would take a gang's port on a test
// cluster's process node, where every pod shares this machine's network.
func TestGangPortsAreNeverPicked(t *testing.T) {
	for _, g := range []struct {
		port int
		what string
	}{
		{gangenv.DefaultPort + 1, "the gang watch of a Master on the default MASTER_PORT"},
		{int(kube.TrainerTrackerPort), "Trainer v2's tracker (DMLC_TRACKER_PORT)"},
		{int(kube.TrainerTrackerPort) + 1, "the gang watch of Trainer v2's rank 0"},
	} {
		if g.port < lowestPickedPort {
			continue
		}
		if !slices.Contains(gangPorts, g.port) {
			t.Errorf("port %d, %s, is not in gangPorts %v", g.port, g.what, gangPorts)
		}
		if pickable(g.port, false, nil) || pickable(g.port-1, true, nil) {
			t.Errorf("Pick may pick %s (port %d), or the port before it with its successor", g.what, g.port)
		}
	}
	if !pickable(29502, true, nil) {
		t.Error("Pick may not pick 29502 and 29503, which no gang holds")
	}
}

// Servers a process starts before any binds (a test cluster's components) never get one port.
func TestPickNeverHandsOutAPortTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p, err := Pick(true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] || seen[p+1] {
			t.Fatalf("Pick = %d, which (or whose successor) it handed out before", p)
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

// A port another process picked is not picked here until that process ends, however it ends:
// two test packages, or a local gang and a local model server, must not both start a server on
// one port that was free when each looked.
func TestAnotherProcesssPortIsNotPicked(t *testing.T) {
	if os.Getenv("NETPORT_HOLDER") != "" {
		p, err := Pick(true, nil)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(p)
		select {} // holds the reservation until killed
	}
	holder := exec.Command(os.Args[0], "-test.run=^TestAnotherProcesssPortIsNotPicked$")
	// With a temporary folder of its own, as each of the test cluster's pods has.
	holder.Env = append(os.Environ(), "NETPORT_HOLDER=1", "TMPDIR="+t.TempDir())
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the holding process printed no port: %v", err)
	}
	p, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the holding process printed %q", line)
	}
	// Its ports are still free to bind: only the reservation keeps them from this process.
	for _, q := range []int{p, p + 1} {
		if !bindable(q) {
			t.Fatalf("port %d, which the holding process only reserved, does not bind", q)
		}
		if machine.reserve(q) {
			t.Fatalf("port %d reserved here while another process holds it", q)
		}
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	for _, q := range []int{p, p + 1} {
		if !machine.reserve(q) {
			t.Fatalf("port %d still held after the holding process was killed", q)
		}
		Release(q)
	}
}

// A port this process released may be picked again; one it holds may not.
func TestReleaseHandsAPortBack(t *testing.T) {
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	if machine.reserve(p) {
		t.Fatalf("port %d reserved twice", p)
	}
	Release(p)
	if !machine.reserve(p) {
		t.Fatalf("port %d not reservable after Release", p)
	}
	Release(p)
}
