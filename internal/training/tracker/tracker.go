package tracker

import (
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
