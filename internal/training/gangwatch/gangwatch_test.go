package gangwatch

import (
	"context"
	"errors"
	"testing"
	"time"
)

// hangGuard bounds each wait for something the watch should do within milliseconds: far beyond
// what a loaded CI machine takes, so it catches hangs, not slowness.
const hangGuard = time.Minute

var fast = Options{Heartbeat: 50 * time.Millisecond, Timeout: 500 * time.Millisecond, StartTimeout: 2 * time.Second}

func startGang(t *testing.T, world int) (*Server, []*Member) {
	t.Helper()
	s, err := Serve("127.0.0.1:0", world, 9999, fast)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var ms []*Member
	for r := 1; r < world; r++ {
		m, err := Join(ctx, s.Addr().String(), r, fast)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if m.TrackerPort() != 9999 {
			t.Fatalf("rank %d was told tracker port %d, rank 0 serves 9999", r, m.TrackerPort())
		}
		ms = append(ms, m)
	}
	return s, ms
}

func TestAllRanksFinish(t *testing.T) {
	for _, world := range []int{1, 2, 4} {
		s, ms := startGang(t, world)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		errs := make(chan error, len(ms))
		for _, m := range ms {
			go func() { errs <- m.Done(ctx) }()
		}
		if err := s.Done(ctx); err != nil {
			t.Fatalf("world %d: server Done: %v", world, err)
		}
		for range ms {
			if err := <-errs; err != nil {
				t.Fatalf("world %d: member Done: %v", world, err)
			}
		}
		cancel()
	}
}

func TestLostRankIsNamedToEveryone(t *testing.T) {
	s, ms := startGang(t, 4)
	ms[1].Close() // rank 2's process dies
	select {
	case l := <-s.Lost():
		if l.Rank != 2 {
			t.Fatalf("server: lost rank %d, want 2 (%v)", l.Rank, l)
		}
	case <-time.After(hangGuard):
		t.Fatal("server did not notice the lost rank")
	}
	for _, m := range []*Member{ms[0], ms[2]} {
		select {
		case l := <-m.Lost():
			if l.Rank != 2 || l.Error() == "" {
				t.Fatalf("member: lost %v, want rank 2", l)
			}
		case <-time.After(hangGuard):
			t.Fatal("member was not told about the lost rank")
		}
	}
}

func TestLostServerIsRankZero(t *testing.T) {
	s, ms := startGang(t, 2)
	s.Close()
	select {
	case l := <-ms[0].Lost():
		if l.Rank != 0 {
			t.Fatalf("lost rank %d, want 0", l.Rank)
		}
	case <-time.After(hangGuard):
		t.Fatal("member did not notice rank 0 going away")
	}
}

// Rank 2 never joins: once the start timeout passes, it is the one lost. The timeout leaves rank 1
// seconds to join, which a busy machine may need.
func TestMissingRankAtStart(t *testing.T) {
	s, err := Serve("127.0.0.1:0", 3, 9999, Options{Heartbeat: 50 * time.Millisecond, Timeout: time.Second, StartTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	m, err := Join(ctx, s.Addr().String(), 1, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = s.Done(ctx)
	var lost *LostError
	if !errors.As(err, &lost) || lost.Rank != 2 {
		t.Fatalf("Done() = %v, want rank 2 lost", err)
	}
}
