// Package gangwatch keeps the ranks of a training gang aware of each other, so that when one
// rank's process dies the others learn which one within a bounded time and stop, instead of
// waiting forever inside a collective call that can no longer complete.
//
// Rank 0 serves; every other rank holds one TCP connection to it. Both ends send a heartbeat
// line every Heartbeat and treat Timeout of silence, or a connection closed before the peer said
// DONE, as the loss of that rank. Rank 0 then tells every surviving rank which rank was lost. A
// gang finishes when every rank has said DONE; rank 0 answers ALLDONE to each.
//
// Rank 0 also tells each rank that joins the port of libxgboost's tracker, which may differ from
// the port the job's environment names (a restarted rank 0 whose port is still held by the
// previous run's closed connections: libxgboost's tracker binds without SO_REUSEADDR).
//
// The wire protocol is one line per message: "HELLO <rank>", "TRACKER <port>" (rank 0's answer
// to HELLO), "PING", "DONE", "ALLDONE", "LOST <rank> <reason>".
package gangwatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options bound how quickly a lost rank is noticed.
type Options struct {
	Heartbeat time.Duration // interval between heartbeats (default 1s)
	Timeout   time.Duration // silence after which a peer counts as lost (default 10s)
	// StartTimeout bounds the wait for every rank to connect (default 5m), as pods of a gang
	// start together but may pull images at different speeds.
	StartTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 5 * time.Minute
	}
	return o
}

// NoticeWithin bounds how long after a rank's loss every surviving rank has been told of it: a
// closed connection is seen at once, a silent rank after Timeout, and rank 0's LOST message
// travels within a heartbeat.
func (o Options) NoticeWithin() time.Duration {
	o = o.withDefaults()
	return o.Timeout + 2*o.Heartbeat
}

// LostError says which rank of the gang was lost and why.
type LostError struct {
	Rank   int
	Reason string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("rank %d lost: %s", e.Rank, e.Reason)
}

// Server is rank 0's side.
type Server struct {
	ln          net.Listener
	world       int
	trackerPort int
	opts        Options

	mu      sync.Mutex
	members map[int]*peer
	done    map[int]bool
	conns   map[net.Conn]bool
	lost    chan *LostError
	lostErr *LostError // the first loss, also told to ranks that join after it
	allDone chan struct{}
}

type peer struct {
	conn net.Conn
	wmu  sync.Mutex
}

func (p *peer) send(line string, timeout time.Duration) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err := p.conn.Write([]byte(line + "\n"))
	return err
}

// Serve listens on addr for the world-1 other ranks and tells each trackerPort, the port of
// libxgboost's tracker on this host.
func Serve(addr string, world, trackerPort int, opts Options) (*Server, error) {
	if world < 1 {
		return nil, fmt.Errorf("gangwatch: world size %d < 1", world)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gangwatch: listen on %s: %w", addr, err)
	}
	s := &Server{
		ln: ln, world: world, trackerPort: trackerPort, opts: opts.withDefaults(),
		members: map[int]*peer{}, done: map[int]bool{0: false}, conns: map[net.Conn]bool{},
		lost: make(chan *LostError, 1), allDone: make(chan struct{}),
	}
	go s.accept()
	go s.watchStart()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Lost delivers the first lost rank, once.
func (s *Server) Lost() <-chan *LostError { return s.lost }

func (s *Server) watchStart() {
	t := time.NewTimer(s.opts.StartTimeout)
	defer t.Stop()
	<-t.C
	s.mu.Lock()
	var missing []string
	for r := 1; r < s.world; r++ {
		if _, ok := s.members[r]; !ok {
			missing = append(missing, strconv.Itoa(r))
		}
	}
	s.mu.Unlock()
	if len(missing) > 0 {
		r, _ := strconv.Atoi(missing[0])
		s.markLost(r, fmt.Sprintf("ranks %s did not join within %s", strings.Join(missing, ","), s.opts.StartTimeout))
	}
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		go s.handle(c)
	}
}

func (s *Server) handle(c net.Conn) {
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(s.opts.Timeout))
	line, err := r.ReadString('\n')
	var rank int
	if err == nil {
		_, err = fmt.Sscanf(line, "HELLO %d", &rank)
	}
	if err != nil || rank <= 0 || rank >= s.world {
		c.Close()
		return
	}
	p := &peer{conn: c}
	s.mu.Lock()
	if _, dup := s.members[rank]; dup {
		s.mu.Unlock()
		_ = p.send(fmt.Sprintf("LOST %d another process already joined as rank %d", rank, rank), s.opts.Timeout)
		c.Close()
		return
	}
	s.members[rank] = p
	s.done[rank] = false
	earlier := s.lostErr
	s.mu.Unlock()
	_ = p.send(fmt.Sprintf("TRACKER %d", s.trackerPort), s.opts.Timeout)
	if earlier != nil {
		_ = p.send(fmt.Sprintf("LOST %d %s", earlier.Rank, earlier.Reason), s.opts.Timeout)
	}

	stop := make(chan struct{})
	defer close(stop)
	go heartbeat(p, s.opts, stop)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.Timeout))
		line, err := r.ReadString('\n')
		if err != nil {
			s.mu.Lock()
			finished := s.done[rank]
			s.mu.Unlock()
			if !finished {
				s.markLost(rank, describe(err, s.opts.Timeout))
			}
			return
		}
		if strings.TrimSpace(line) == "DONE" {
			s.markDone(rank)
		}
	}
}

func heartbeat(p *peer, o Options, stop <-chan struct{}) {
	t := time.NewTicker(o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if p.send("PING", o.Timeout) != nil {
				return
			}
		}
	}
}

func describe(err error, timeout time.Duration) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("no heartbeat for %s", timeout)
	}
	return "its process exited or its connection closed before it finished"
}

func (s *Server) markLost(rank int, reason string) {
	s.mu.Lock()
	if s.lostErr != nil {
		s.mu.Unlock()
		return
	}
	s.lostErr = &LostError{Rank: rank, Reason: reason}
	peers := make([]*peer, 0, len(s.members))
	for r, p := range s.members {
		if r != rank {
			peers = append(peers, p)
		}
	}
	s.mu.Unlock()
	for _, p := range peers {
		_ = p.send(fmt.Sprintf("LOST %d %s", rank, reason), s.opts.Timeout)
	}
	s.lost <- s.lostErr
}

func (s *Server) markDone(rank int) {
	s.mu.Lock()
	s.done[rank] = true
	all := len(s.done) == s.world
	for _, d := range s.done {
		all = all && d
	}
	peers := make([]*peer, 0, len(s.members))
	for _, p := range s.members {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	if all {
		for _, p := range peers {
			_ = p.send("ALLDONE", s.opts.Timeout)
		}
		close(s.allDone)
	}
}

// Done records that rank 0 finished and waits until every rank has.
func (s *Server) Done(ctx context.Context) error {
	s.markDone(0)
	select {
	case <-s.allDone:
		return nil
	case l := <-s.lost:
		s.lost <- l
		return l
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops serving and drops every connection.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	return err
}

// Member is the side of ranks 1..world-1.
type Member struct {
	p           *peer
	trackerPort int
	opts        Options
	lost        chan *LostError
	allDone     chan struct{}
}

// Join connects rank to the server at addr, retrying until the server is up or StartTimeout
// passes (rank 0 may start later than the others).
func Join(ctx context.Context, addr string, rank int, opts Options) (*Member, error) {
	opts = opts.withDefaults()
	deadline := time.Now().Add(opts.StartTimeout)
	var c net.Conn
	for {
		var err error
		d := net.Dialer{Timeout: opts.Timeout}
		c, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("gangwatch: rank %d cannot reach rank 0 at %s: %w", rank, addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	m := &Member{p: &peer{conn: c}, opts: opts, lost: make(chan *LostError, 1), allDone: make(chan struct{})}
	if err := m.p.send(fmt.Sprintf("HELLO %d", rank), opts.Timeout); err != nil {
		c.Close()
		return nil, fmt.Errorf("gangwatch: rank %d: %w", rank, err)
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(opts.Timeout))
	line, err := r.ReadString('\n')
	if err == nil {
		_, err = fmt.Sscanf(line, "TRACKER %d", &m.trackerPort)
	}
	if err != nil {
		c.Close()
		if l, ok := lostLine(line); ok {
			return nil, l
		}
		return nil, fmt.Errorf("gangwatch: rank %d: rank 0 at %s did not tell its tracker's port (got %q): %w", rank, addr, line, err)
	}
	stop := make(chan struct{})
	go heartbeat(m.p, opts, stop)
	go m.read(r, stop)
	return m, nil
}

// TrackerPort is the port of libxgboost's tracker that rank 0 told this rank.
func (m *Member) TrackerPort() int { return m.trackerPort }

// lostLine parses a "LOST <rank> <reason>" line.
func lostLine(line string) (*LostError, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "LOST ") {
		return nil, false
	}
	f := strings.SplitN(line, " ", 3)
	rank, _ := strconv.Atoi(f[1])
	reason := ""
	if len(f) == 3 {
		reason = f[2]
	}
	return &LostError{Rank: rank, Reason: reason}, true
}

func (m *Member) read(r *bufio.Reader, stop chan struct{}) {
	defer close(stop)
	for {
		_ = m.p.conn.SetReadDeadline(time.Now().Add(m.opts.Timeout))
		line, err := r.ReadString('\n')
		if err != nil {
			select {
			case <-m.allDone:
			default:
				m.lost <- &LostError{Rank: 0, Reason: describe(err, m.opts.Timeout)}
			}
			return
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "ALLDONE":
			close(m.allDone)
			m.p.conn.Close()
			return
		case strings.HasPrefix(line, "LOST "):
			l, _ := lostLine(line)
			m.lost <- l
			return
		}
	}
}

// Lost delivers the first lost rank, once.
func (m *Member) Lost() <-chan *LostError { return m.lost }

// Done tells rank 0 this rank finished and waits until every rank has.
func (m *Member) Done(ctx context.Context) error {
	if err := m.p.send("DONE", m.opts.Timeout); err != nil {
		return fmt.Errorf("gangwatch: report done: %w", err)
	}
	select {
	case <-m.allDone:
		return nil
	case l := <-m.lost:
		m.lost <- l
		return l
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close drops the connection.
func (m *Member) Close() error { return m.p.conn.Close() }
