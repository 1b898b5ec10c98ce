package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The coordinator side of the tracker: one goroutine (run) owns the job state, assigns ranks
// and links the workers, fed by the listener (listener.go).

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
