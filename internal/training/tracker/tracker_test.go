package tracker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// logRecorder is a slog.Handler that keeps every record for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// find returns the rank attribute of the first record whose message is msg.
func (h *logRecorder) find(msg string) (rank int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		rank = -2
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "rank" {
				rank = int(a.Value.Int64())
			}
			return true
		})
		return rank, true
	}
	return 0, false
}

func startTracker(t *testing.T, world int, opts ...Option) (*Tracker, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	opts = append([]Option{WithLogger(slog.New(rec))}, opts...)
	tr, err := Start(t.Context(), "127.0.0.1:0", world, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, rec
}

// hangGuard bounds a test's waits, which would otherwise block until DefaultStartTimeout or for
// ever: far beyond the milliseconds a loaded CI machine takes, so it catches hangs, not slowness.
const hangGuard = time.Minute

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkConsistent verifies the topology the workers received, as a whole.
func checkConsistent(t *testing.T, workers []*fakeWorker) {
	t.Helper()
	n := len(workers)
	byRank := make([]*fakeWorker, n)
	for _, w := range workers {
		if w.rank < 0 || w.rank >= n {
			t.Fatalf("task %s got rank %d, want [0,%d)", w.taskID, w.rank, n)
		}
		if byRank[w.rank] != nil {
			t.Fatalf("rank %d given to tasks %s and %s", w.rank, byRank[w.rank].taskID, w.taskID)
		}
		byRank[w.rank] = w
		if w.world != n {
			t.Errorf("rank %d: world size %d, want %d", w.rank, w.world, n)
		}
	}
	for r, w := range byRank {
		if r == 0 && w.parent != -1 {
			t.Errorf("rank 0 has parent %d", w.parent)
		}
		if w.parent >= 0 {
			if !slices.Contains(w.tree, w.parent) {
				t.Errorf("rank %d: parent %d not in tree neighbours %v", r, w.parent, w.tree)
			}
			if !slices.Contains(byRank[w.parent].tree, r) {
				t.Errorf("rank %d: parent %d does not list it (%v)", r, w.parent, byRank[w.parent].tree)
			}
		}
		for _, nb := range w.tree {
			if nb != w.parent && byRank[nb].parent != r {
				t.Errorf("rank %d: child %d has parent %d", r, nb, byRank[nb].parent)
			}
		}
		switch n {
		case 1:
			if w.prev != -1 || w.next != -1 {
				t.Errorf("single worker got ring %d/%d, want -1/-1", w.prev, w.next)
			}
		default:
			if w.next != (r+1)%n || w.prev != (r+n-1)%n {
				t.Errorf("rank %d: ring prev/next %d/%d, want %d/%d", r, w.prev, w.next, (r+n-1)%n, (r+1)%n)
			}
			if byRank[w.next].prev != r {
				t.Errorf("rank %d: next %d has prev %d", r, w.next, byRank[w.next].prev)
			}
		}
	}
	// Every link carries data both ways; both ends must talk at once.
	errs := make(chan error, n)
	for _, w := range workers {
		go func() { errs <- w.exchange() }()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func numericIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

func TestRendezvous(t *testing.T) {
	type mode struct {
		name string
		ids  func(n int) []string // task ids in arrival order
		// wantRank maps a task id to its expected rank, or -1 for any.
		wantRank func(id string) int
	}
	numeric := func(id string) int {
		if r, err := strconv.Atoi(id); err == nil {
			return r
		}
		return -1
	}
	modes := []mode{
		{"task ids in order", numericIDs, numeric},
		{"task ids reversed", func(n int) []string {
			ids := numericIDs(n)
			slices.Reverse(ids)
			return ids
		}, numeric},
		{"task ids shuffled", func(n int) []string {
			ids := numericIDs(n)
			rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			return ids
		}, numeric},
		{"no task ids", func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = "NULL"
			}
			return ids
		}, numeric},
		{"mixed", func(n int) []string {
			ids := numericIDs(n)
			for i := 0; i < n; i += 2 {
				ids[i] = "NULL"
			}
			slices.Reverse(ids)
			return ids
		}, numeric},
	}
	for n := 1; n <= 5; n++ {
		for _, m := range modes {
			t.Run(fmt.Sprintf("n=%d/%s", n, m.name), func(t *testing.T) {
				ctx := testContext(t, 2*hangGuard)
				tr, rec := startTracker(t, n)
				ids := m.ids(n)
				workers, err := runJob(ctx, tr.Addr().String(), ids, 5*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range workers {
					if want := m.wantRank(w.taskID); want >= 0 && w.rank != want {
						t.Errorf("task %s got rank %d, want %d", w.taskID, w.rank, want)
					}
				}
				checkConsistent(t, workers)
				for _, w := range workers {
					if err := w.print(ctx, fmt.Sprintf("  progress of rank %d\n", w.rank)); err != nil {
						t.Fatal(err)
					}
				}
				for _, w := range workers {
					if err := w.shutdown(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if err := tr.Wait(ctx); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				// Print messages arrive on their own connections, which
				// may still be in flight when the last shutdown lands.
				for _, w := range workers {
					msg := fmt.Sprintf("progress of rank %d", w.rank)
					rank, ok := rec.find(msg)
					if !ok {
						t.Errorf("print %q not logged", msg)
					} else if rank != w.rank {
						t.Errorf("print %q logged with rank %d", msg, rank)
					}
				}
				for r, info := range tr.Workers() {
					if info.Rank != r || info.Host != "127.0.0.1" || info.Port == 0 {
						t.Errorf("Workers()[%d] = %+v", r, info)
					}
				}
			})
		}
	}
}

// Workers without numeric task ids are ranked by host, then task id, not by
// arrival.
func TestBatchRanksAreDeterministic(t *testing.T) {
	ids := []string{"worker-c", "worker-a", "worker-d", "worker-b"}
	want := map[string]int{"worker-a": 0, "worker-b": 1, "worker-c": 2, "worker-d": 3}
	for run := range 3 {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			ctx := testContext(t, 2*hangGuard)
			tr, _ := startTracker(t, len(ids))
			order := slices.Clone(ids)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			workers, err := runJob(ctx, tr.Addr().String(), order, 2*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range workers {
				if w.rank != want[w.taskID] {
					t.Errorf("arrival %v: task %s got rank %d, want %d", order, w.taskID, w.rank, want[w.taskID])
				}
				w.shutdown(ctx)
			}
			if err := tr.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A worker may wait for its rank far longer than one link conversation may
// take (WithLinkTimeout): pods of a gang can start minutes apart.
func TestPendingWorkerOutlivesLinkTimeout(t *testing.T) {
	ctx := testContext(t, 2*hangGuard)
	tr, _ := startTracker(t, 2, WithLinkTimeout(100*time.Millisecond))
	workers, err := runJob(ctx, tr.Addr().String(), []string{"NULL", "NULL"}, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, workers)
	for _, w := range workers {
		w.shutdown(ctx)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// rabit's fault-tolerant mode re-links a worker that lost links with
// "recover": it keeps its rank, and its peers re-link to it.
func TestRecover(t *testing.T) {
	ctx := testContext(t, 2*hangGuard)
	tr, _ := startTracker(t, 3)
	workers, err := runJob(ctx, tr.Addr().String(), numericIDs(3), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Rank 2 loses its link to rank 0 (n=3: 2's neighbours are 0 and 1).
	w0, w2 := workers[0], workers[2]
	w0.links[2].Close()
	delete(w0.links, 2)
	w2.links[0].Close()
	delete(w2.links, 0)
	errs := make(chan error, 2)
	// Either order works: the tracker links one at a time, and whichever
	// comes first accepts from the other.
	go func() { errs <- w2.recover(ctx) }()
	go func() { errs <- w0.recover(ctx) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	checkConsistent(t, workers)
	for _, w := range workers {
		w.shutdown(ctx)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// A stray connection (a probe, a port scanner) must not disturb the job.
func TestStrayConnectionIsIgnored(t *testing.T) {
	ctx := testContext(t, 2*hangGuard)
	tr, _ := startTracker(t, 2)
	for _, payload := range [][]byte{nil, []byte("GET / HTTP/1.0\r\n\r\n"), appendInt(nil, magic)} {
		c, err := net.Dial("tcp", tr.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(payload)
		c.Close()
	}
	workers, err := runJob(ctx, tr.Addr().String(), numericIDs(2), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		w.shutdown(ctx)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFailures checks that every failure the tracker can observe ends Wait
// promptly with a *LostError naming the right worker.
func TestFailures(t *testing.T) {
	// A hang guard: each case fails in well under a second; one the tracker missed would block
	// until the 10-minute DefaultStartTimeout.
	const bound = hangGuard
	tests := []struct {
		name  string
		world int
		opts  []Option
		// run drives the workers; it may return before the failure.
		run       func(ctx context.Context, t *testing.T, addr string)
		wantRanks []int  // ranks of LostError.Workers
		wantMsg   string // substring of the error
	}{
		{
			name: "worker disconnects while waiting for its rank", world: 3,
			run: func(ctx context.Context, t *testing.T, addr string) {
				w := &fakeWorker{tracker: addr, taskID: "NULL"}
				c, err := w.dial(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := sendHello(c, -1, -1, "NULL", cmdStart); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
				c.Close()
			},
			wantRanks: []int{-1}, wantMsg: "worker without rank (host 127.0.0.1, task NULL): disconnected while waiting for its rank",
		},
		{
			name: "worker disconnects during link setup", world: 3,
			run: func(ctx context.Context, t *testing.T, addr string) {
				w := &fakeWorker{tracker: addr, taskID: "1", dropAfterAssignment: true}
				if err := w.start(ctx); err != nil {
					t.Fatal(err)
				}
			},
			wantRanks: []int{1}, wantMsg: "rank 1 (host 127.0.0.1, task 1): read live links during link setup",
		},
		{
			name: "worker dies after linking, its peer cannot reach it", world: 2,
			run: func(ctx context.Context, t *testing.T, addr string) {
				dead := &fakeWorker{tracker: addr, taskID: "0", dieAfterLink: true}
				if err := dead.start(ctx); err != nil {
					t.Fatal(err)
				}
				peer := &fakeWorker{tracker: addr, taskID: "1"}
				go peer.start(ctx) // fails once the tracker gives up
			},
			wantRanks: []int{0}, wantMsg: "rank 0 (host 127.0.0.1, task 0): unreachable from rank 1 (host 127.0.0.1) in 8 attempts",
		},
		{
			name: "rank never joins", world: 3, opts: []Option{WithStartTimeout(300 * time.Millisecond)},
			run: func(ctx context.Context, t *testing.T, addr string) {
				for _, id := range []string{"0", "2"} {
					go (&fakeWorker{tracker: addr, taskID: id}).start(ctx)
				}
			},
			wantRanks: []int{1}, wantMsg: "rank 1 (never connected): 1 of 3 ranks did not join within 300ms",
		},
		{
			name: "workers without task ids never complete the world", world: 3, opts: []Option{WithStartTimeout(300 * time.Millisecond)},
			run: func(ctx context.Context, t *testing.T, addr string) {
				for range 2 {
					go (&fakeWorker{tracker: addr, taskID: "NULL"}).start(ctx)
				}
			},
			wantRanks: []int{0, 1, 2}, wantMsg: "(2 workers without a numeric DMLC_TASK_ID are waiting for the rest)",
		},
		{
			name: "rank does not shut down", world: 3, opts: []Option{WithShutdownTimeout(300 * time.Millisecond)},
			run: func(ctx context.Context, t *testing.T, addr string) {
				workers, err := runJob(ctx, addr, numericIDs(3), 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range workers {
					if w.rank != 2 {
						w.shutdown(ctx)
					}
				}
			},
			wantRanks: []int{2}, wantMsg: "rank 2 (host 127.0.0.1, task 2): no shutdown within 300ms after the first rank shut down",
		},
		{
			name: "rank does not join, the others shut down", world: 3,
			opts: []Option{WithShutdownTimeout(200 * time.Millisecond)},
			run: func(ctx context.Context, t *testing.T, addr string) {
				// Rank 0 links (its peers would connect to it later) and
				// shuts down without waiting for them.
				w := &fakeWorker{tracker: addr, taskID: "0", dieAfterLink: true}
				if err := w.start(ctx); err != nil {
					t.Fatal(err)
				}
				w.shutdown(ctx)
			},
			wantRanks: []int{1, 2}, wantMsg: "rank 1 (never connected), rank 2 (never connected): no shutdown within 200ms",
		},
		{
			name: "two workers share a task id", world: 3,
			run: func(ctx context.Context, t *testing.T, addr string) {
				if err := (&fakeWorker{tracker: addr, taskID: "0", dieAfterLink: true}).start(ctx); err != nil {
					t.Fatal(err)
				}
				go (&fakeWorker{tracker: addr, taskID: "0"}).start(ctx)
			},
			wantRanks: []int{0}, wantMsg: "rank 0 (host 127.0.0.1, task 0): host 127.0.0.1 (task 0) asks for rank 0, which this worker already holds",
		},
		{
			name: "task id outside the world", world: 2,
			run: func(ctx context.Context, t *testing.T, addr string) {
				go (&fakeWorker{tracker: addr, taskID: "2"}).start(ctx)
			},
			wantRanks: []int{-1}, wantMsg: `DMLC_TASK_ID "2" asks for rank 2, outside [0, 2)`,
		},
		{
			name: "world size disagrees", world: 2,
			run: func(ctx context.Context, t *testing.T, addr string) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				sendHello(c, -1, 4, "0", cmdStart)
			},
			wantRanks: []int{-1}, wantMsg: "worker says world size is 4, tracker expects 2",
		},
		{
			name: "shutdown from a rank nobody holds", world: 2,
			run: func(ctx context.Context, t *testing.T, addr string) {
				(&fakeWorker{tracker: addr, taskID: "1", rank: 1, world: 2}).shutdown(ctx)
			},
			wantRanks: []int{1}, wantMsg: "sent shutdown for rank 1, which no worker holds",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t, 2*hangGuard)
			tr, _ := startTracker(t, tt.world, tt.opts...)
			began := time.Now()
			tt.run(ctx, t, tr.Addr().String())
			waitCtx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			err := tr.Wait(waitCtx)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait still blocked after %s: %v", bound, err)
			}
			var lost *LostError
			if !errors.As(err, &lost) {
				t.Fatalf("Wait = %v, want a *LostError", err)
			}
			var ranks []int
			for _, w := range lost.Workers {
				ranks = append(ranks, w.Rank)
			}
			if !slices.Equal(ranks, tt.wantRanks) {
				t.Errorf("lost ranks %v, want %v (%v)", ranks, tt.wantRanks, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.wantMsg)
			}
			t.Logf("failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
		})
	}
}

func TestWaitContextNamesMissingRanks(t *testing.T) {
	ctx := testContext(t, 2*hangGuard)
	tr, _ := startTracker(t, 3)
	workers, err := runJob(ctx, tr.Addr().String(), numericIDs(3), 0)
	if err != nil {
		t.Fatal(err)
	}
	workers[0].shutdown(ctx)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = tr.Wait(short)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ranks [1 2] to shut down") {
		t.Fatalf("Wait = %v, want a deadline error naming ranks [1 2]", err)
	}
	// The tracker keeps running after an abandoned Wait.
	workers[1].shutdown(ctx)
	workers[2].shutdown(ctx)
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCloseEndsWait(t *testing.T) {
	ctx := testContext(t, 2*hangGuard)
	tr, _ := startTracker(t, 2)
	// One worker waits for its peers to link; Close must not hang on it.
	go (&fakeWorker{tracker: tr.Addr().String(), taskID: "NULL"}).start(ctx)
	time.Sleep(50 * time.Millisecond)
	tr.Close()
	if err := tr.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
	if _, err := net.Dial("tcp", tr.Addr().String()); err == nil {
		t.Error("tracker port still accepts after Close")
	}
}

func TestCancelStartContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	tr, err := Start(ctx, "127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cancel()
	err = tr.Wait(testContext(t, hangGuard))
	if !errors.Is(err, ErrClosed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancelling Start's context = %v, want ErrClosed and context.Canceled", err)
	}
}

func TestStartRejectsBadWorldSize(t *testing.T) {
	if _, err := Start(t.Context(), "127.0.0.1:0", 0); err == nil {
		t.Fatal("Start with world size 0 succeeded")
	}
}

func TestAdvertisedHost(t *testing.T) {
	// A connection from a non-loopback address needs a non-loopback local
	// address: use any address of this machine, or skip that row.
	var external string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				external = ipn.IP.String()
				break
			}
		}
	}
	conn := func(t *testing.T, ip string) net.Conn {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		return s
	}
	tests := []struct {
		name     string
		host     string
		viewerIP string
		want     string
	}{
		{"remote peer, loopback viewer", "10.1.2.3", "127.0.0.1", "10.1.2.3"},
		{"loopback peer, loopback viewer", "127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"remote peer, remote viewer", "10.1.2.3", external, "10.1.2.3"},
		{"loopback peer, remote viewer", "127.0.0.1", external, external},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.viewerIP == "" {
				t.Skip("this machine has no non-loopback IPv4 address")
			}
			if got := advertisedHost(tt.host, conn(t, tt.viewerIP)); got != tt.want {
				t.Errorf("advertisedHost(%s) = %s, want %s", tt.host, got, tt.want)
			}
		})
	}
}
