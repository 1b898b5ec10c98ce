package train

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/training/gangwatch"
)

// fakeGang names a lost rank after a delay, as rank 0's gang watch does once it has read the dead
// rank's closed connection.
type fakeGang struct {
	lostCh chan *gangwatch.LostError
	dones  int
}

func (g *fakeGang) lost() <-chan *gangwatch.LostError { return g.lostCh }
func (g *fakeGang) done(context.Context) error        { g.dones++; return nil }
func (g *fakeGang) close()                            {}
func (g *fakeGang) trackerPort() int                  { return 0 }

func TestFailureNamesTheLostRank(t *testing.T) {
	// Where a rank is lost, the notice window is far longer than the loss takes to be named, so a
	// loaded machine that fires the test's timers late cannot close the window first (the test's
	// hang guard ends the wait instead, failing it); where none is lost, the short window is
	// waited out in full.
	short := gangwatch.Options{Heartbeat: 50 * time.Millisecond, Timeout: 500 * time.Millisecond}
	long := gangwatch.Options{Heartbeat: 50 * time.Millisecond, Timeout: 10 * time.Minute}
	libErr := errors.New("allreduce: [17:30:25] socket error: Connection reset by peer")
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		name      string
		err       error
		lostAfter time.Duration // < 0: no rank is lost
		want      string
		wantDone  int
	}{
		// A survivor's collective call fails before the watch names the dead rank: the dead rank
		// is reported, not the survivor's socket error.
		{"loss named after the failure", libErr, 200 * time.Millisecond, "training stopped: rank 2 lost: its process exited", 0},
		{"loss named before the failure", libErr, 0, "training stopped: rank 2 lost: its process exited", 0},
		// No rank is lost: the failure is this rank's own.
		{"no loss", libErr, -1, libErr.Error(), 0},
		// A failure every rank shares ends the gang as done, with the shared message.
		{"gang-wide check", &gangError{errors.New("the ranks disagree: x")}, -1, "the ranks disagree: x", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &fakeGang{lostCh: make(chan *gangwatch.LostError, 1)}
			watch := short
			if c.lostAfter >= 0 {
				watch = long
				time.AfterFunc(c.lostAfter, func() {
					g.lostCh <- &gangwatch.LostError{Rank: 2, Reason: "its process exited or its connection closed before it finished"}
				})
			}
			// A hang guard: a loss never named would otherwise keep failure() in the long window.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			began := time.Now()
			err := failure(ctx, c.err, g, Job{Watch: watch}, log)
			took := time.Since(began)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("failure() = %v, want %q", err, c.want)
			}
			// The notice window cannot close early: a causal lower bound.
			if c.lostAfter < 0 && !errors.As(c.err, new(*gangError)) && took < watch.NoticeWithin() {
				t.Fatalf("gave up waiting for a lost rank after %s, want %s", took, watch.NoticeWithin())
			}
			if g.dones != c.wantDone {
				t.Fatalf("said done %d times, want %d", g.dones, c.wantDone)
			}
		})
	}
}
