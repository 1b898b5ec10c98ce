package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds a wait that should end by itself; it measures nothing.
const hangGuard = 30 * time.Second

// deadlinePair is a loopback connection whose server side came from a deadlineListener
// with a 5 ms tick.
func deadlinePair(t *testing.T) (l *deadlineListener, server *deadlineConn, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = newDeadlineListener(ln, 5*time.Millisecond, timeouts{})
	t.Cleanup(func() { l.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// The client's reads and writes must never hang the test.
	_ = client.SetDeadline(time.Now().Add(hangGuard))
	return l, c.(*deadlineConn), client
}

// waitPast returns once the sweeper's clock has passed at: a deadline at is then expired.
func waitPast(t *testing.T, l *deadlineListener, at time.Time) {
	t.Helper()
	for end := time.Now().Add(hangGuard); l.now.Load() <= at.UnixNano(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the sweeper's clock does not advance")
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

// A read blocked past its deadline returns a timeout, as a net.Conn's does; a read
// begun after it fails at once.
func TestDeadlineCutsAPendingRead(t *testing.T) {
	l, c, _ := deadlinePair(t)
	at := time.Now().Add(20 * time.Millisecond)
	if err := c.SetReadDeadline(at); err != nil {
		t.Fatal(err)
	}
	if c.read.real.Load() {
		t.Fatal("a future deadline went to the connection")
	}
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	select {
	case err := <-done:
		if !isTimeout(err) {
			t.Fatalf("read past its deadline: %v, want a timeout", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("a read blocked past its deadline is not cut short")
	}
	waitPast(t, l, at)
	if _, err := c.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("read after the deadline: %v, want a timeout", err)
	}
}

// A deadline moved before it passes does not cut the read short; clearing one that
// went to the connection lets reads through again.
func TestDeadlineMovedOrCleared(t *testing.T) {
	l, c, client := deadlinePair(t)
	first := time.Now().Add(10 * time.Millisecond)
	_ = c.SetReadDeadline(first)
	_ = c.SetReadDeadline(time.Now().Add(time.Hour))
	waitPast(t, l, first)
	if _, err := client.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if n, err := c.Read(b); err != nil || n != 1 || b[0] != 'a' {
		t.Fatalf("read after a moved deadline: %d %q %v, want the byte sent", n, b[:n], err)
	}

	// net/http stops its background read with a deadline long past, then clears it.
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(b); !isTimeout(err) {
		t.Fatalf("read past a deadline set in the past: %v, want a timeout", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(b); err != nil || n != 1 || b[0] != 'b' {
		t.Fatalf("read after the deadline was cleared: %d %q %v, want the byte sent", n, b[:n], err)
	}
}

// A write blocked on a client that reads nothing returns a timeout past its deadline.
func TestDeadlineCutsAPendingWrite(t *testing.T) {
	_, c, _ := deadlinePair(t)
	_ = c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		for {
			if _, err := c.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !isTimeout(err) {
			t.Fatalf("write past its deadline: %v, want a timeout", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("a write blocked past its deadline is not cut short")
	}
}

// The sweeper ends once the listener and its last connection are closed, and closed
// connections leave its set.
func TestDeadlineSweeperEnds(t *testing.T) {
	l, c, client := deadlinePair(t)
	client.Close()
	c.Close()
	c.Close() // net/http may close twice
	l.Close()
	select {
	case <-l.done:
	case <-time.After(hangGuard):
		t.Fatal("the sweeper runs on after its listener and connections closed")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) != 0 {
		t.Fatalf("%d closed connections still in the sweeper's set", len(l.conns))
	}
	if _, err := io.ReadAll(client); err == nil {
		t.Fatal("the closed client reads")
	}
}

func TestSweepTick(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{10 * time.Second, 60 * time.Second, 65 * time.Second, 2 * time.Minute}, 250 * time.Millisecond},
		{[]time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 5300 * time.Millisecond}, 18750 * time.Microsecond},
		{[]time.Duration{0, 0, 5 * time.Second, 2 * time.Minute}, 250 * time.Millisecond},
		{[]time.Duration{time.Millisecond}, time.Millisecond},
		{nil, 250 * time.Millisecond},
	} {
		if got := sweepTick(tc.in...); got != tc.want {
			t.Errorf("sweepTick(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// phaseServer serves handler with net/http over a deadlineListener with timeouts t and a
// 2 ms tick, on the listener's own http.Server, as Run's; it returns the listener's address.
func phaseServer(t *testing.T, tm timeouts, handler http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newDeadlineListener(ln, 2*time.Millisecond, tm)
	srv := l.httpServer(handler)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// dialRaw is a client connection that never hangs the test.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	return c
}

const phaseRequest = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"

// readAnswer reads one answer off a kept-alive connection.
func readAnswer(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// answeredOnce serves a handler that reads the body with timeouts tm, and sends it one
// request on a connection kept alive, whose answer it reads.
func answeredOnce(t *testing.T, tm timeouts) (addr string, c net.Conn, br *bufio.Reader) {
	t.Helper()
	addr = phaseServer(t, tm, func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	c = dialRaw(t, addr)
	if _, err := io.WriteString(c, phaseRequest); err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(c)
	readAnswer(t, br)
	return addr, c, br
}

// closedByServer reports whether the server closed c (a read ends without the hang guard).
func closedByServer(c net.Conn) bool {
	_, err := io.ReadAll(c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// A kept-alive connection with no next request is closed once the idle timeout passes.
func TestIdleConnectionIsClosed(t *testing.T) {
	_, _, br := answeredOnce(t, timeouts{readHeader: time.Minute, read: time.Minute, write: time.Minute, idle: 30 * time.Millisecond})
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want the server to close it", err)
	}
}

// The header of a kept-alive connection's next request has the header timeout from its
// first bytes, not the (longer) idle timeout; so has the first request's.
func TestNextRequestsHeaderIsTimed(t *testing.T) {
	// Half a second of header time: the first request's header must be read within it, by a
	// server goroutine a busy machine may start late.
	addr, c, _ := answeredOnce(t, timeouts{readHeader: 500 * time.Millisecond, read: time.Minute, write: time.Minute, idle: time.Minute})
	// Past the first request's header deadline: the idle timeout holds the connection.
	time.Sleep(time.Second)
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Le"); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(c) {
		t.Fatal("a next request whose header stopped arriving holds its connection")
	}

	first := dialRaw(t, addr)
	if !closedByServer(first) {
		t.Fatal("a connection that sends no request is held past the header timeout")
	}
}

// A client that reads nothing of a large answer has its connection cut once the write
// timeout passes: the handler's write returns.
func TestUnreadAnswerIsCut(t *testing.T) {
	werr := make(chan error, 1)
	addr := phaseServer(t, timeouts{readHeader: time.Minute, read: time.Minute, write: 30 * time.Millisecond, idle: time.Minute},
		func(w http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 1<<20)
			for {
				if _, err := w.Write(buf); err != nil {
					werr <- err
					return
				}
			}
		})
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, phaseRequest); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-werr:
		if !isTimeout(err) && !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("write to a client that reads nothing: %v, want a timeout", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("an answer the client does not read holds its handler past the write timeout")
	}
}

// A request that takes longer than the header timeout keeps its context: the header's
// deadline ends with the header (net/http's background read, which cancels the context
// when the client goes, has none). The header time is long enough for a busy machine to
// read the header within it; the request runs twice as long.
func TestLongRequestKeepsItsContext(t *testing.T) {
	const readHeader = 500 * time.Millisecond
	ctxErr := make(chan error, 1)
	addr := phaseServer(t, timeouts{readHeader: readHeader, read: time.Minute, write: time.Minute, idle: time.Minute},
		func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(2 * readHeader):
			}
			ctxErr <- r.Context().Err()
		})
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, phaseRequest); err != nil {
		t.Fatal(err)
	}
	readAnswer(t, bufio.NewReader(c))
	if err := <-ctxErr; err != nil {
		t.Fatalf("the request's context ended while it ran: %v", err)
	}
}
