package server

import (
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connection deadlines that cost an atomic store instead of a timer, and the server's
// timeouts without a clock read a request.
//
// With read, write and idle timeouts, net/http sets a connection's deadlines several
// times a request (idle, header, body, write), and each moves a runtime timer: a lock,
// a heap fix and a clock read. On a one-row request that made the timeouts alone cost
// the bare net/http floor up to 1.23x its CPU (runtime/README.md, "Under load"). The
// runtime's timeouts are hundreds of milliseconds to minutes and none needs precision
// to the microsecond, so a deadlineListener's connections record a future deadline in
// an atomic, and one sweeper goroutine per listener, every tick, cuts short the reads
// and writes whose deadline has passed by setting the connection's own deadline in
// the past. A deadline holds to within a tick. A deadline already past (net/http sets
// one to stop its background read when a handler returns) goes to the connection at
// once, as does clearing a deadline that went there.
//
// The header, write and idle timeouts are the listener's own (http.Server's are off):
// net/http reads the clock for each of them, a request, to set them, where the
// connection's phase, which the server reports to connState, and the sweeper's clock
// give them for nothing. Each direction has two deadlines: the one set on the
// connection (by net/http, for the whole request's ReadTimeout, which it counts from
// a clock read it makes anyway, and to stop its background read; or by a handler), and,
// where that is none, the phase's:
//   - new connection: its first request's header, within readHeader;
//   - idle (an answer written): the next request, within idle; its first bytes start
//     its header, within readHeader;
//   - active (a request's header read): no read deadline of the phase (net/http's
//     ReadTimeout bounds the body; its background read waits for the client to go), the
//     answer within write.

// deadlineListener accepts connections with coarse deadlines and runs their sweeper.
type deadlineListener struct {
	net.Listener
	tick     time.Duration
	timeouts timeouts     // the phases' (read is net/http's: httpServer)
	now      atomic.Int64 // the sweeper's clock: UnixNano at its last tick

	mu     sync.Mutex
	conns  map[*deadlineConn]struct{}
	closed bool          // the listener is closed: the sweeper ends with the last connection
	done   chan struct{} // closed when the sweeper has ended
}

// sweepTick is how often the sweeper looks at deadlines: a sixteenth of the shortest
// timeout, from a millisecond to a quarter of a second (without timeouts).
func sweepTick(timeouts ...time.Duration) time.Duration {
	shortest := time.Duration(0)
	for _, d := range timeouts {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return 250 * time.Millisecond
	}
	return min(max(shortest/16, time.Millisecond), 250*time.Millisecond)
}

// newDeadlineListener sweeps every tick; t are the phases' timeouts (0: none).
func newDeadlineListener(ln net.Listener, tick time.Duration, t timeouts) *deadlineListener {
	l := &deadlineListener{Listener: ln, tick: tick, timeouts: t, conns: map[*deadlineConn]struct{}{}, done: make(chan struct{})}
	l.now.Store(time.Now().UnixNano())
	go l.sweep()
	return l
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[dc] = struct{}{}
	l.mu.Unlock()
	return dc, nil
}

// connState is the http.Server's ConnState hook: it gives a connection its phase's
// deadlines as net/http moves it from one phase to the next.
func (l *deadlineListener) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*deadlineConn)
	if !ok {
		return
	}
	switch st {
	case http.StateNew:
		c.enter(phaseHeader, l.timeouts.readHeader, 0)
	case http.StateActive:
		c.enter(phaseActive, 0, l.timeouts.write)
	case http.StateIdle:
		c.enter(phaseIdle, l.timeouts.idle, 0)
	}
}

// httpServer is an http.Server for h on this listener: net/http keeps the whole request's
// read timeout, which it counts from a clock read it makes anyway; the listener keeps the
// header, write and idle timeouts, for which net/http would read the clock each time
// (negative: none of net/http's own, where zero would fall back to ReadTimeout).
func (l *deadlineListener) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadTimeout:       l.timeouts.read,
		ReadHeaderTimeout: -1,
		IdleTimeout:       -1,
		ConnState:         l.connState,
	}
}

// after is the time d from the sweeper's clock (0 for no timeout): at most a tick early.
func (l *deadlineListener) after(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return l.now.Load() + int64(d)
}

// Close stops accepting; the connections keep their deadlines until they close (a
// shutdown drains them).
func (l *deadlineListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.Listener.Close()
}

// sweep ticks until the listener is closed and its last connection too.
func (l *deadlineListener) sweep() {
	defer close(l.done)
	t := time.NewTicker(l.tick)
	defer t.Stop()
	var conns []*deadlineConn
	for now := range t.C {
		n := now.UnixNano()
		l.now.Store(n)
		l.mu.Lock()
		if l.closed && len(l.conns) == 0 {
			l.mu.Unlock()
			return
		}
		conns = conns[:0]
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		for _, c := range conns {
			c.expire(n)
		}
		clear(conns) // hold no closed connection until the next tick
	}
}

// deadlineConn is a connection whose future deadlines the sweeper enforces.
type deadlineConn struct {
	net.Conn
	l *deadlineListener

	mu          sync.Mutex // orders the connection's own deadlines: the sweeper's against a set's
	read, write half
	phase       atomic.Int32 // phaseHeader, phaseActive or phaseIdle
	// The errors of reads and writes past their deadline, made once: net/http stops its
	// background read at the end of every request with a deadline in the past, so a read
	// fails that way once a request.
	readTimeout, writeTimeout atomic.Pointer[net.OpError]
}

// The phases of a connection, for its timeouts (see the top of this file).
const (
	phaseHeader = iota
	phaseActive
	phaseIdle
)

// half is the deadlines of one direction.
type half struct {
	at    atomic.Int64 // UnixNano, as set on the connection; 0: none
	phase atomic.Int64 // UnixNano, the phase's timeout, in force where at is none; 0: none
	real  atomic.Bool  // the connection's own deadline is set (changed under deadlineConn.mu)
}

// due is the deadline in force: the one set, or the phase's.
func (h *half) due() int64 {
	if at := h.at.Load(); at != 0 {
		return at
	}
	return h.phase.Load()
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.read.at.Store(unixNano(t))
	return c.settle(&c.read, c.Conn.SetReadDeadline)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.write.at.Store(unixNano(t))
	return c.settle(&c.write, c.Conn.SetWriteDeadline)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}

// enter starts phase p with its read and write timeouts (0: none).
func (c *deadlineConn) enter(p int32, read, write time.Duration) {
	c.phase.Store(p)
	c.read.phase.Store(c.l.after(read))
	_ = c.settle(&c.read, c.Conn.SetReadDeadline)
	c.write.phase.Store(c.l.after(write))
	_ = c.settle(&c.write, c.Conn.SetWriteDeadline)
}

// settle makes the connection's own deadline agree with h's after a change: a deadline in
// force that has passed goes to it at once; a future one or none is an atomic load, unless
// the connection's own deadline is set. The sweeper sets that flag before it sets the
// deadline and looks at h's after, so either this sees the flag or the sweeper sees the
// new deadline (and undoes its own).
func (c *deadlineConn) settle(h *half, setReal func(time.Time) error) error {
	due := h.due()
	if due != 0 && due <= c.l.now.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		h.real.Store(true)
		return setReal(time.Unix(0, due))
	}
	if !h.real.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.real.Load() && h.due() == due {
		h.real.Store(false)
		return setReal(time.Time{})
	}
	return nil
}

// expire sets the connection's own deadline, in the past, for each direction whose
// deadline has passed: a pending read or write returns at once with a timeout.
func (c *deadlineConn) expire(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read.expire(now, c.Conn.SetReadDeadline)
	c.write.expire(now, c.Conn.SetWriteDeadline)
}

func (h *half) expire(now int64, setReal func(time.Time) error) {
	at := h.due()
	if at == 0 || at > now || h.real.Load() {
		return
	}
	h.real.Store(true)
	_ = setReal(time.Unix(0, at))
	// Moved or cleared meanwhile (settle saw no flag): the deadline did pass, so a read
	// or write cut short by it was due; what comes next gets the new deadline.
	if at2 := h.due(); at2 == 0 || at2 > now {
		h.real.Store(false)
		_ = setReal(time.Time{})
	}
}

// Read fails at once once its deadline has passed by the sweeper's clock; a read that
// blocks past it is cut short by the sweeper. The first bytes read on an idle connection are a
// new request's: its header's timeout begins.
func (c *deadlineConn) Read(b []byte) (int, error) {
	if at := c.read.due(); at != 0 && at <= c.l.now.Load() {
		return 0, c.timeout(&c.readTimeout, "read")
	}
	n, err := c.Conn.Read(b)
	if n > 0 && c.phase.Load() == phaseIdle {
		c.enter(phaseHeader, c.l.timeouts.readHeader, 0)
	}
	return n, err
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	if at := c.write.due(); at != 0 && at <= c.l.now.Load() {
		return 0, c.timeout(&c.writeTimeout, "write")
	}
	return c.Conn.Write(b)
}

// timeout is the error a net.Conn returns for I/O past its deadline, kept in *made after
// the first (callers only read an error).
func (c *deadlineConn) timeout(made *atomic.Pointer[net.OpError], op string) error {
	if err := made.Load(); err != nil {
		return err
	}
	err := &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
	made.Store(err)
	return err
}

// CloseWrite half-closes a TCP connection: net/http does so before closing a connection
// whose request it refused, so that the client reads the answer.
func (c *deadlineConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close leaves the sweeper's set (again, harmlessly, when net/http closes twice).
func (c *deadlineConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
