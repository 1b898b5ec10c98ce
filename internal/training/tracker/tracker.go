package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults for the options.
const (
	DefaultStartTimeout = 10 * time.Minute
	DefaultLinkTimeout  = 2 * time.Minute
)

// maxLinkAttempts bounds how often one worker may report failed connections
// to its peers. libxgboost retries immediately and forever ("do { ... } while
// (num_error != 0)" in ReConnectLinks), so without a bound a dead peer would
// keep the rendezvous spinning until the start timeout.
const maxLinkAttempts = 8

// drainTimeout bounds how long a finished job waits for connections that
// were accepted before the last shutdown (a final print) to be served.
const drainTimeout = 2 * time.Second

// ErrClosed is returned by Wait when the tracker was closed, or its context
// cancelled, before every worker shut down.
var ErrClosed = errors.New("tracker closed before all workers shut down")

// Option configures a Tracker.
type Option func(*config)

type config struct {
	logger          *slog.Logger
	startTimeout    time.Duration
	linkTimeout     time.Duration
	shutdownTimeout time.Duration
}

// WithLogger sets the logger for tracker events and for the workers' print
// messages (logged at Info with the worker's rank). The default discards.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithStartTimeout bounds the time from Start until every rank has finished
// its rendezvous (default DefaultStartTimeout). Pods of one gang start
// together, but image pulls and data loading differ per node.
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithLinkTimeout bounds one connection's conversation with the tracker: the
// hello, and one worker's whole link negotiation, during which it connects to
// its peers (default DefaultLinkTimeout). The tracker links workers one at a
// time, so a stalled worker holds up the others for at most this long.
func WithLinkTimeout(d time.Duration) Option { return func(c *config) { c.linkTimeout = d } }

// WithShutdownTimeout makes the job fail when some rank has not sent
// "shutdown" d after the first rank did. Ranks of a data-parallel job finish
// their last collective call together, so they shut down close together;
// a rank that stays silent is lost. Zero (the default) waits without bound.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) { c.shutdownTimeout = d }
}

// Worker describes one worker as the tracker knows it.
type Worker struct {
	Rank   int    // -1 while it has none
	Host   string // address the worker connected from; "" if it never connected
	TaskID string // DMLC_TASK_ID as sent, "NULL" when unset
	Port   int    // port the worker accepts peer links on, 0 until linked
}

func (w Worker) String() string {
	var b strings.Builder
	if w.Rank >= 0 {
		fmt.Fprintf(&b, "rank %d", w.Rank)
	} else {
		b.WriteString("worker without rank")
	}
	if w.Host == "" {
		b.WriteString(" (never connected)")
		return b.String()
	}
	fmt.Fprintf(&b, " (host %s, task %s)", w.Host, w.TaskID)
	return b.String()
}

// LostError reports that the job cannot go on and names the workers the
// tracker holds responsible.
type LostError struct {
	Workers []Worker
	Reason  string
	Err     error // underlying I/O error, if any
}

func (e *LostError) Error() string {
	names := make([]string, len(e.Workers))
	for i, w := range e.Workers {
		names[i] = w.String()
	}
	msg := "tracker: lost " + strings.Join(names, ", ") + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *LostError) Unwrap() error { return e.Err }

// Tracker is a running rendezvous tracker for one training job.
type Tracker struct {
	cfg   config
	log   *slog.Logger
	world int
	topo  topology
	ln    net.Listener

	parent    context.Context // Start's ctx
	ctx       context.Context // parent, or Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // every goroutine
	serving   sync.WaitGroup // connections still in serve
	accepting chan struct{}  // closed when acceptLoop returns

	joins     chan joinRequest
	shutdowns chan shutdownRequest
	gone      chan *pendingWorker

	done chan struct{}
	err  error // final result, set before done is closed

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	workers []Worker // by rank, mirrored from the coordinator for Workers and Wait
	shut    []bool   // by rank: sent "shutdown"
}

// Start listens on addr (host:port; ":9999" for all interfaces) right away,
// so the port is bound before any worker starts, and runs the tracker for a
// job of worldSize workers in the background. Cancelling ctx stops it as
// Close does.
func Start(ctx context.Context, addr string, worldSize int, opts ...Option) (*Tracker, error) {
	if worldSize < 1 {
		return nil, fmt.Errorf("tracker: world size %d, want at least 1", worldSize)
	}
	cfg := config{startTimeout: DefaultStartTimeout, linkTimeout: DefaultLinkTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tracker: listen on %s: %w", addr, err)
	}
	t := &Tracker{
		cfg:       cfg,
		log:       cfg.logger,
		world:     worldSize,
		topo:      newTopology(worldSize),
		ln:        ln,
		joins:     make(chan joinRequest),
		shutdowns: make(chan shutdownRequest),
		gone:      make(chan *pendingWorker, worldSize),
		done:      make(chan struct{}),
		accepting: make(chan struct{}),
		conns:     make(map[net.Conn]struct{}),
		workers:   make([]Worker, worldSize),
		shut:      make([]bool, worldSize),
	}
	for r := range t.workers {
		t.workers[r] = Worker{Rank: r}
	}
	t.parent = ctx
	t.ctx, t.cancel = context.WithCancel(ctx)
	t.log.Info("tracker listening", "addr", ln.Addr().String(), "world_size", worldSize)
	t.wg.Add(2)
	go t.acceptLoop()
	go t.run()
	return t, nil
}

// Addr is the address the tracker listens on.
func (t *Tracker) Addr() net.Addr { return t.ln.Addr() }

// Workers returns what the tracker knows of each rank, indexed by rank.
func (t *Tracker) Workers() []Worker {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.workers)
}

// Done is closed when the job has finished or failed; Wait then returns
// without blocking.
func (t *Tracker) Done() <-chan struct{} { return t.done }

// Wait blocks until every rank has sent "shutdown" (nil), the job failed
// (a *LostError naming the workers), the tracker was closed (ErrClosed) or
// ctx is done (ctx's error; the tracker keeps running).
func (t *Tracker) Wait(ctx context.Context) error {
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return fmt.Errorf("tracker: waiting for %s: %w", t.describeMissingShutdowns(), context.Cause(ctx))
	}
}

// Close stops the tracker and closes every connection. It is safe to call
// more than once and after the job finished.
func (t *Tracker) Close() error {
	t.cancel()
	t.wg.Wait()
	return nil
}

// describeMissingShutdowns names the ranks Wait is still waiting for.
func (t *Tracker) describeMissingShutdowns() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var unlinked, running []string
	for r, w := range t.workers {
		switch {
		case w.Port == 0:
			unlinked = append(unlinked, strconv.Itoa(r))
		case !t.shut[r]:
			running = append(running, strconv.Itoa(r))
		}
	}
	var parts []string
	if len(unlinked) > 0 {
		parts = append(parts, "ranks ["+strings.Join(unlinked, " ")+"] to join")
	}
	if len(running) > 0 {
		parts = append(parts, "ranks ["+strings.Join(running, " ")+"] to shut down")
	}
	return strings.Join(parts, " and ")
}

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

// pendingWorker is a worker without a numeric task id, waiting for the batch
// assignment. A watcher goroutine reads from its connection: the worker sends
// nothing while it waits, so any result means it went away.
type pendingWorker struct {
	peer
	seq       int
	interrupt chan struct{}
	watchDone chan struct{}
	watchErr  error
}

func (t *Tracker) watch(pw *pendingWorker) {
	defer t.wg.Done()
	var b [1]byte
	_, err := pw.conn.Read(b[:])
	select {
	case <-pw.interrupt:
		// The coordinator stopped the read (deadline) to take the conn over.
	default:
		if err == nil {
			err = errors.New("unexpected data while waiting for a rank")
		}
		pw.watchErr = err
	}
	close(pw.watchDone)
	if pw.watchErr != nil {
		select {
		case t.gone <- pw:
		case <-t.ctx.Done():
		}
	}
}

// takeOver stops pw's watcher so the coordinator may use its connection. It
// returns the watcher's error if the worker had already gone.
func (pw *pendingWorker) takeOver() error {
	close(pw.interrupt)
	pw.conn.SetReadDeadline(time.Now())
	<-pw.watchDone
	pw.conn.SetReadDeadline(time.Time{})
	return pw.watchErr
}

// member is a worker that holds a rank.
type member struct {
	Worker
	waitAccept int  // peers that will still connect to it
	shutdown   bool // sent "shutdown"
}

// coordinator holds the job state; only run touches it.
type coordinator struct {
	members  []*member // by rank; nil until the rank has linked
	pending  []*pendingWorker
	seq      int
	waitConn map[int]*member // ranks still accepting peer links
	linked   int
	shutdown int
}

func (t *Tracker) run() {
	defer t.wg.Done()
	co := &coordinator{
		members:  make([]*member, t.world),
		waitConn: make(map[int]*member),
	}
	err := t.loop(co)
	t.err = err
	if err == nil {
		// A worker sends its last print and then its shutdown on separate
		// connections; they are served concurrently, so the print may still
		// be in flight. Let connections already accepted finish, briefly.
		t.ln.Close()
		<-t.accepting // no serving.Add after this
		drained := make(chan struct{})
		go func() { t.serving.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(drainTimeout):
		case <-t.ctx.Done():
		}
	}
	t.cancel()
	t.ln.Close()
	t.closeAllConns()
	switch {
	case err == nil:
		t.log.Info("tracker: all workers shut down", "world_size", t.world)
	case errors.Is(err, ErrClosed):
	default:
		t.log.Error("tracker: job failed", "err", err)
	}
	close(t.done)
}

func (t *Tracker) loop(co *coordinator) error {
	startTimer := time.NewTimer(t.cfg.startTimeout)
	defer startTimer.Stop()
	var shutdownTimer <-chan time.Time
	for {
		select {
		case <-t.ctx.Done():
			if cause := context.Cause(t.parent); cause != nil {
				return fmt.Errorf("%w: %w", ErrClosed, cause)
			}
			return ErrClosed
		case <-startTimer.C:
			return t.startTimeoutError(co)
		case <-shutdownTimer:
			var lost []Worker
			for r, m := range co.members {
				switch {
				case m == nil:
					lost = append(lost, Worker{Rank: r})
				case !m.shutdown:
					lost = append(lost, m.Worker)
				}
			}
			return &LostError{Workers: lost, Reason: fmt.Sprintf(
				"no shutdown within %s after the first rank shut down", t.cfg.shutdownTimeout)}
		case pw := <-t.gone:
			if slices.Contains(co.pending, pw) {
				return &LostError{
					Workers: []Worker{{Rank: -1, Host: pw.host, TaskID: pw.taskID}},
					Reason:  "disconnected while waiting for its rank", Err: pw.watchErr}
			}
		case req := <-t.joins:
			if err := t.join(co, req.peer); err != nil {
				return err
			}
			if co.linked == t.world && startTimer.Stop() {
				t.log.Info("tracker: all workers started", "world_size", t.world)
			}
		case req := <-t.shutdowns:
			if err := t.markShutdown(co, req.peer); err != nil {
				return err
			}
			if co.shutdown == t.world {
				return nil
			}
			if co.shutdown == 1 && t.cfg.shutdownTimeout > 0 {
				shutdownTimer = time.After(t.cfg.shutdownTimeout)
			}
		}
	}
}

func (t *Tracker) startTimeoutError(co *coordinator) error {
	var lost []Worker
	for r, m := range co.members {
		if m == nil {
			lost = append(lost, Worker{Rank: r})
		}
	}
	reason := fmt.Sprintf("%d of %d ranks did not join within %s", len(lost), t.world, t.cfg.startTimeout)
	if len(co.pending) > 0 {
		reason += fmt.Sprintf(" (%d workers without a numeric DMLC_TASK_ID are waiting for the rest)", len(co.pending))
	}
	return &LostError{Workers: lost, Reason: reason}
}

func (t *Tracker) markShutdown(co *coordinator, p peer) error {
	if p.rank < 0 || p.rank >= t.world || co.members[p.rank] == nil {
		return &LostError{
			Workers: []Worker{{Rank: p.rank, Host: p.host, TaskID: p.taskID}},
			Reason:  fmt.Sprintf("sent shutdown for rank %d, which no worker holds", p.rank)}
	}
	m := co.members[p.rank]
	if m.shutdown {
		return &LostError{
			Workers: []Worker{m.Worker},
			Reason:  fmt.Sprintf("rank %d shut down twice (second time from host %s, task %s)", p.rank, p.host, p.taskID)}
	}
	m.shutdown = true
	co.shutdown++
	t.mu.Lock()
	t.shut[p.rank] = true
	t.mu.Unlock()
	t.log.Debug("tracker: worker shut down", "rank", p.rank, "host", p.host)
	return nil
}

// claimedRank is the rank a joining worker asks for, or -1.
func claimedRank(h hello) int {
	if h.rank >= 0 {
		return h.rank
	}
	if r, err := strconv.Atoi(strings.TrimSpace(h.taskID)); err == nil {
		return r
	}
	// A task id that only ends in a number ("worker-3") is not taken as a
	// rank: the prefix could mean anything.
	return -1
}

// join handles a "start" or "recover" connection.
func (t *Tracker) join(co *coordinator, p peer) error {
	w := Worker{Rank: p.rank, Host: p.host, TaskID: p.taskID}
	if p.worldSize > 0 && p.worldSize != t.world {
		t.untrack(p.conn)
		return &LostError{Workers: []Worker{w}, Reason: fmt.Sprintf(
			"worker says world size is %d, tracker expects %d (DMLC_NUM_WORKER / WORLD_SIZE disagree)",
			p.worldSize, t.world)}
	}
	rank := claimedRank(p.hello)
	if p.cmd == cmdRecover {
		if p.rank < 0 || p.rank >= t.world || co.members[p.rank] == nil {
			t.untrack(p.conn)
			return &LostError{Workers: []Worker{w}, Reason: fmt.Sprintf(
				"asked to recover rank %d, which no worker holds", p.rank)}
		}
		t.log.Warn("tracker: worker recovers its links", "rank", p.rank, "host", p.host)
		return t.link(co, p, p.rank)
	}
	if rank < 0 {
		free := t.world - co.linked
		if len(co.pending) >= free {
			t.untrack(p.conn)
			return &LostError{Workers: []Worker{w}, Reason: fmt.Sprintf(
				"joined but all %d ranks are taken or spoken for: more workers than the world size?", t.world)}
		}
		pw := &pendingWorker{peer: p, seq: co.seq, interrupt: make(chan struct{}), watchDone: make(chan struct{})}
		co.seq++
		// It may wait for the rest of the gang far longer than one
		// conversation may take; the start timeout bounds the wait.
		p.conn.SetDeadline(time.Time{})
		co.pending = append(co.pending, pw)
		t.wg.Add(1)
		go t.watch(pw)
		t.log.Debug("tracker: worker waits for a rank", "host", p.host, "task", p.taskID)
		return t.assignPending(co)
	}
	if rank >= t.world {
		t.untrack(p.conn)
		return &LostError{Workers: []Worker{w}, Reason: fmt.Sprintf(
			"DMLC_TASK_ID %q asks for rank %d, outside [0, %d)", p.taskID, rank, t.world)}
	}
	if m := co.members[rank]; m != nil {
		t.untrack(p.conn)
		return &LostError{Workers: []Worker{m.Worker}, Reason: fmt.Sprintf(
			"host %s (task %s) asks for rank %d, which this worker already holds: "+
				"a restarted worker whose first process was lost, two workers with one DMLC_TASK_ID, "+
				"or workers with and without numeric task ids mixed",
			p.host, p.taskID, rank)}
	}
	if err := t.link(co, p, rank); err != nil {
		return err
	}
	return t.assignPending(co)
}

// assignPending hands the free ranks to the waiting workers once every free
// rank has one, in the order described in the package comment.
func (t *Tracker) assignPending(co *coordinator) error {
	free := t.world - co.linked
	if len(co.pending) == 0 || len(co.pending) < free {
		return nil
	}
	batch := co.pending
	co.pending = nil
	slices.SortFunc(batch, func(a, b *pendingWorker) int {
		return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.taskID, b.taskID), cmp.Compare(a.seq, b.seq))
	})
	// Take every connection over before linking any: a worker that is
	// already gone fails the job now rather than halfway through.
	for i, pw := range batch {
		if err := pw.takeOver(); err != nil {
			for _, rest := range batch[i+1:] {
				rest.takeOver()
			}
			for _, b := range batch {
				t.untrack(b.conn)
			}
			return &LostError{Workers: []Worker{{Rank: -1, Host: pw.host, TaskID: pw.taskID}},
				Reason: "disconnected while waiting for its rank", Err: err}
		}
	}
	next := 0
	for i, pw := range batch {
		for co.members[next] != nil {
			next++
		}
		if err := t.link(co, pw.peer, next); err != nil {
			for _, rest := range batch[i+1:] {
				t.untrack(rest.conn)
			}
			return err
		}
	}
	return nil
}

// link runs one worker's link negotiation (tracker.py WorkerEntry.assign_rank
// and _get_remote; the worker side is the do/while loop in ReConnectLinks).
//
// Workers are linked one at a time, and that is what makes the scheme work:
// a worker connects to each neighbour that has already linked and still
// accepts (waitConn), and accepts connections from every other neighbour,
// which will link later and be told to connect to it. Two neighbours linking
// concurrently would both wait to accept from each other.
//
// The conversation: the tracker sends the assignment; then, in rounds, the
// worker sends the neighbours it already has live links to ("good"; empty on
// start), the tracker answers how many to connect to, how many to accept and,
// per connection, host, port and rank; the worker reports how many connects
// failed, and on zero sends the port it accepts on and closes.
func (t *Tracker) link(co *coordinator, p peer, rank int) (err error) {
	c := p.conn
	defer t.untrack(c)
	w := Worker{Rank: rank, Host: p.host, TaskID: p.taskID}
	fail := func(reason string, err error) error {
		if t.ctx.Err() != nil {
			return ErrClosed
		}
		return &LostError{Workers: []Worker{w}, Reason: reason, Err: err}
	}
	c.SetDeadline(time.Now().Add(t.cfg.linkTimeout))
	if err := sendAssignment(c, rank, t.topo); err != nil {
		return fail("send rank assignment", err)
	}
	neighbours := t.topo.neighbours(rank)
	var prevConnect []int
	for attempt := 1; ; attempt++ {
		ngood, err := readInt(c)
		if err != nil {
			return fail("read live links during link setup", err)
		}
		if ngood < 0 || ngood > maxNeighbours {
			return fail(fmt.Sprintf("sent %d live links", ngood), nil)
		}
		good := make([]int, ngood)
		for i := range good {
			if good[i], err = readInt(c); err != nil {
				return fail("read live links during link setup", err)
			}
			if !slices.Contains(neighbours, good[i]) {
				return fail(fmt.Sprintf("reports a live link to rank %d, not one of its neighbours %v", good[i], neighbours), nil)
			}
		}
		// Connections that succeeded in a failed round show up as live
		// links now; count them against the peer's expected accepts.
		for _, r := range prevConnect {
			if slices.Contains(good, r) {
				co.acceptedFrom(r)
			}
		}
		var toConnect []int
		nAccept := 0
		for _, r := range neighbours {
			if slices.Contains(good, r) {
				continue
			}
			if _, ok := co.waitConn[r]; ok {
				toConnect = append(toConnect, r)
			} else {
				nAccept++
			}
		}
		if attempt > 1 {
			// Back off a little: libxgboost retries at once.
			select {
			case <-time.After(time.Duration(attempt-1) * 100 * time.Millisecond):
			case <-t.ctx.Done():
				return ErrClosed
			}
		}
		b := appendInt(nil, len(toConnect))
		b = appendInt(b, nAccept)
		for _, r := range toConnect {
			m := co.waitConn[r]
			b = appendString(b, advertisedHost(m.Host, c))
			b = appendInt(b, m.Port)
			b = appendInt(b, r)
		}
		if _, err := c.Write(b); err != nil {
			return fail("send peers to connect to", err)
		}
		nerr, err := readInt(c)
		if err != nil {
			return fail("read link result", err)
		}
		if nerr != 0 {
			if attempt >= maxLinkAttempts {
				var lost []Worker
				for _, r := range toConnect {
					lost = append(lost, co.waitConn[r].Worker)
				}
				return &LostError{Workers: lost, Reason: fmt.Sprintf(
					"unreachable from rank %d (host %s) in %d attempts", rank, p.host, attempt)}
			}
			t.log.Warn("tracker: worker failed to reach peers, retrying",
				"rank", rank, "failed", nerr, "peers", toConnect, "attempt", attempt)
			prevConnect = toConnect
			continue
		}
		port, err := readInt(c)
		if err != nil {
			return fail("read peer port", err)
		}
		if port <= 0 || port > 65535 {
			return fail(fmt.Sprintf("sent peer port %d", port), nil)
		}
		for _, r := range toConnect {
			co.acceptedFrom(r)
		}
		m := co.members[rank]
		if m == nil {
			m = &member{}
			co.members[rank] = m
			co.linked++
		}
		m.Worker = Worker{Rank: rank, Host: p.host, TaskID: p.taskID, Port: port}
		m.waitAccept = nAccept
		if nAccept > 0 {
			co.waitConn[rank] = m
		} else {
			delete(co.waitConn, rank)
		}
		t.mu.Lock()
		t.workers[rank] = m.Worker
		t.mu.Unlock()
		t.log.Info("tracker: worker linked", "rank", rank, "host", p.host, "task", p.taskID,
			"peer_port", port, "connects", toConnect, "accepts", nAccept)
		return nil
	}
}

// acceptedFrom records that rank r accepted one more of its expected peer
// links; a rank that expects no more leaves waitConn, so no later worker is
// sent to its closed listener.
func (co *coordinator) acceptedFrom(r int) {
	m, ok := co.waitConn[r]
	if !ok {
		return
	}
	m.waitAccept--
	if m.waitAccept <= 0 {
		delete(co.waitConn, r)
	}
}
