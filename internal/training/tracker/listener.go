package tracker

import (
	"errors"
	"net"
	"strings"
	"time"
)

// The listener side of the tracker: it accepts connections, reads each one's hello, answers
// print itself and hands shutdown and the rendezvous commands to the coordinator
// (coordinator.go), which owns the job state.

// track registers c so Close can interrupt blocking I/O on it; it returns
// false once the tracker is stopping.
func (t *Tracker) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Tracker) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

func (t *Tracker) closeAllConns() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		c.Close()
	}
}

func (t *Tracker) acceptLoop() {
	defer t.wg.Done()
	defer close(t.accepting)
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Anything else (EMFILE) is transient: log, pause, retry.
			t.log.Warn("tracker: accept", "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		t.serving.Add(1)
		go t.serve(c)
	}
}

// peer is one worker connection after its hello.
type peer struct {
	conn net.Conn
	host string // remote IP
	hello
}

type joinRequest struct{ peer }

type shutdownRequest struct{ peer }

// serve reads one connection's hello and dispatches on the command. Print is
// handled here; shutdown and the rendezvous commands go to the coordinator,
// which owns all job state.
func (t *Tracker) serve(c net.Conn) {
	defer t.wg.Done()
	defer t.serving.Done()
	handedOver := false
	defer func() {
		if !handedOver {
			t.untrack(c)
		}
	}()
	c.SetDeadline(time.Now().Add(t.cfg.linkTimeout))
	h, err := readHello(c)
	if err != nil {
		// Not fatal: anything may connect to the port (probes, scanners).
		t.log.Warn("tracker: dropped connection before a complete hello",
			"remote", c.RemoteAddr().String(), "err", err)
		return
	}
	p := peer{conn: c, host: remoteHost(c), hello: h}
	switch h.cmd {
	case cmdPrint:
		msg, err := readString(c, maxMessageLen)
		if err != nil {
			t.log.Warn("tracker: read print message", "rank", h.rank, "host", p.host, "err", err)
			return
		}
		t.log.Info(strings.TrimSpace(msg), "rank", h.rank)
	case cmdShutdown:
		select {
		case t.shutdowns <- shutdownRequest{p}:
		case <-t.ctx.Done():
		}
	case cmdStart, cmdRecover:
		select {
		case t.joins <- joinRequest{p}:
			handedOver = true
		case <-t.ctx.Done():
		}
	default:
		t.log.Warn("tracker: unknown command", "cmd", h.cmd, "host", p.host, "task", h.taskID)
	}
}

// remoteHost is the address other workers must use to reach this worker:
// rabit workers do not announce a host, the tracker uses the connection's
// source address (as tracker.py does with the accepted socket's peer name).
func remoteHost(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	h, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	return h
}

// advertisedHost is the address to give the worker on conn viewer for a
// peer that connected from host. A peer that reached the tracker over
// loopback runs on the tracker's machine; a worker on another machine must
// be told the tracker machine's address instead, which is the local address
// its own connection arrived at. Without this, a rank 0 that reaches its
// in-process tracker via localhost would be advertised as 127.0.0.1 to
// every other pod.
func advertisedHost(host string, viewer net.Conn) string {
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return host
	}
	va, ok1 := viewer.RemoteAddr().(*net.TCPAddr)
	la, ok2 := viewer.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || va.IP.IsLoopback() {
		return host
	}
	return la.IP.String()
}
