package tracker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"
)

// fakeWorker speaks the worker side of the protocol as libxgboost 1.7's
// AllreduceBase::ReConnectLinks does, including the peer links, so tests
// can check that what the tracker hands out really wires the workers up.
type fakeWorker struct {
	tracker string // host:port
	taskID  string

	// Fault injection.
	dropAfterAssignment bool // close the tracker socket after reading the rank
	dieAfterLink        bool // close the peer listener instead of accepting

	// Filled by start.
	rank, parent, world int
	tree                []int
	prev, next          int
	links               map[int]net.Conn
	connectRounds       int // link rounds with at least one failed connect
}

func (w *fakeWorker) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", w.tracker)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return c, nil
}

func sendHello(c net.Conn, rank, world int, taskID, cmd string) error {
	b := appendInt(nil, magic)
	if _, err := c.Write(b); err != nil {
		return err
	}
	m, err := readInt(c)
	if err != nil {
		return fmt.Errorf("read magic echo: %w", err)
	}
	if m != magic {
		return fmt.Errorf("magic echo %#x", m)
	}
	b = appendInt(nil, rank)
	b = appendInt(b, world)
	b = appendString(b, taskID)
	b = appendString(b, cmd)
	_, err = c.Write(b)
	return err
}

func readInts(r io.Reader, n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		v, err := readInt(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// start runs the first rendezvous and returns once every peer link is up.
func (w *fakeWorker) start(ctx context.Context) error {
	w.rank = -1
	return w.rendezvous(ctx, cmdStart)
}

// recover re-links a worker that keeps its rank; links still in w.links
// are reported as live.
func (w *fakeWorker) recover(ctx context.Context) error {
	return w.rendezvous(ctx, cmdRecover)
}

func (w *fakeWorker) rendezvous(ctx context.Context, cmd string) error {
	defer func() {
		if dl, ok := ctx.Deadline(); ok {
			for _, l := range w.links {
				l.SetDeadline(dl)
			}
		}
	}()
	c, err := w.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := sendHello(c, w.rank, -1, w.taskID, cmd); err != nil {
		return err
	}
	head, err := readInts(c, 4)
	if err != nil {
		return fmt.Errorf("read assignment: %w", err)
	}
	if w.rank >= 0 && head[0] != w.rank {
		return fmt.Errorf("%s: rank %d was given rank %d", cmd, w.rank, head[0])
	}
	w.rank, w.parent, w.world = head[0], head[1], head[2]
	if w.tree, err = readInts(c, head[3]); err != nil {
		return err
	}
	ring, err := readInts(c, 2)
	if err != nil {
		return err
	}
	w.prev, w.next = ring[0], ring[1]
	if w.dropAfterAssignment {
		return nil
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	if w.links == nil {
		w.links = map[int]net.Conn{}
	}
	var nAccept int
	for {
		b := appendInt(nil, len(w.links))
		for r := range w.links {
			b = appendInt(b, r)
		}
		if _, err := c.Write(b); err != nil {
			return err
		}
		counts, err := readInts(c, 2)
		if err != nil {
			return fmt.Errorf("read connect/accept counts: %w", err)
		}
		nAccept = counts[1]
		nerr := 0
		for range counts[0] {
			host, err := readString(c, maxHostLen)
			if err != nil {
				return err
			}
			pr, err := readInts(c, 2)
			if err != nil {
				return err
			}
			var d net.Dialer
			pc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(pr[0])))
			if err != nil {
				nerr++
				continue
			}
			if err := writeInt(pc, w.rank); err != nil {
				return err
			}
			got, err := readInt(pc)
			if err != nil {
				nerr++
				pc.Close()
				continue
			}
			if got != pr[1] {
				return fmt.Errorf("rank %d: peer at %s says rank %d, tracker said %d", w.rank, host, got, pr[1])
			}
			w.links[got] = pc
		}
		if err := writeInt(c, nerr); err != nil {
			return err
		}
		if nerr == 0 {
			break
		}
		w.connectRounds++
	}
	if err := writeInt(c, ln.Addr().(*net.TCPAddr).Port); err != nil {
		return err
	}
	c.Close()
	if w.dieAfterLink {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		ln.(*net.TCPListener).SetDeadline(dl)
	}
	for range nAccept {
		pc, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("rank %d: accept peer: %w", w.rank, err)
		}
		if err := writeInt(pc, w.rank); err != nil {
			return err
		}
		r, err := readInt(pc)
		if err != nil {
			return err
		}
		if _, dup := w.links[r]; dup {
			return fmt.Errorf("rank %d: second link from rank %d", w.rank, r)
		}
		w.links[r] = pc
	}
	want := w.neighbours()
	got := slices.Sorted(func(yield func(int) bool) {
		for r := range w.links {
			if !yield(r) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: links to %v, want tree+ring neighbours %v", w.rank, got, want)
	}
	return nil
}

// neighbours is every rank this worker must link to: tree plus ring.
func (w *fakeWorker) neighbours() []int {
	set := slices.Clone(w.tree)
	for _, r := range []int{w.prev, w.next} {
		if r >= 0 {
			set = append(set, r)
		}
	}
	slices.Sort(set)
	return slices.Compact(set)
}

func (w *fakeWorker) command(ctx context.Context, cmd string, payload ...string) error {
	c, err := w.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := sendHello(c, w.rank, w.world, w.taskID, cmd); err != nil {
		return err
	}
	for _, p := range payload {
		if err := writeString(c, p); err != nil {
			return err
		}
	}
	return nil
}

func (w *fakeWorker) print(ctx context.Context, msg string) error {
	return w.command(ctx, cmdPrint, msg)
}

func (w *fakeWorker) shutdown(ctx context.Context) error {
	for _, l := range w.links {
		l.Close()
	}
	return w.command(ctx, cmdShutdown)
}

// exchange sends every link this worker's rank and reads the peer's, proving
// the links carry data both ways.
func (w *fakeWorker) exchange() error {
	errs := make(chan error, len(w.links))
	for r, l := range w.links {
		go func() {
			if err := writeInt(l, 1000+w.rank); err != nil {
				errs <- err
				return
			}
			v, err := readInt(l)
			if err == nil && v != 1000+r {
				err = fmt.Errorf("rank %d: link to %d carried %d", w.rank, r, v)
			}
			errs <- err
		}()
	}
	var all []error
	for range w.links {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// runJob starts one fake worker per task id concurrently, staggered by
// arrival order, and returns them once all finished their rendezvous.
func runJob(ctx context.Context, addr string, taskIDs []string, stagger time.Duration) ([]*fakeWorker, error) {
	workers := make([]*fakeWorker, len(taskIDs))
	errs := make(chan error, len(taskIDs))
	for i, id := range taskIDs {
		workers[i] = &fakeWorker{tracker: addr, taskID: id}
		go func() {
			time.Sleep(time.Duration(i) * stagger)
			errs <- workers[i].start(ctx)
		}()
	}
	var all []error
	for range taskIDs {
		all = append(all, <-errs)
	}
	return workers, errors.Join(all...)
}
