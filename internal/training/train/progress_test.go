package train

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/training/gangenv"
)

// TestRoundLogIsBoundedByTime: 400000 rounds in two minutes get at most a line per second plus
// one per 1% (not 400000 lines), the last round always; a short run still logs every round.
func TestRoundLogIsBoundedByTime(t *testing.T) {
	count := func(every, total int, perRound time.Duration) (lines int, lastLogged bool) {
		clock := time.Unix(0, 0)
		g := newRoundLog(every, total)
		g.now = func() time.Time { return clock }
		for r := 1; r <= total; r++ {
			clock = clock.Add(perRound)
			if g.due(r, r == total) {
				lines++
				lastLogged = r == total
			}
		}
		return lines, lastLogged
	}
	// 400000 rounds at 0.3 ms: 120 s.
	lines, last := count(1, 400000, 300*time.Microsecond)
	if lines > 120+100+1 || !last {
		t.Errorf("400000 rounds in 120s: %d lines (last logged %v), want at most 221 and the last", lines, last)
	}
	t.Logf("400000 rounds in 120s: %d progress lines", lines)
	if lines, last := count(1, 5, time.Millisecond); lines != 5 || !last {
		t.Errorf("5 rounds: %d lines, want every round", lines)
	}
	// Slow rounds (2 s each): every round is a line, as many as seconds/2.
	if lines, _ := count(1, 50, 2*time.Second); lines != 50 {
		t.Errorf("50 rounds of 2s: %d lines, want 50", lines)
	}
	// LogEvery thins: only every 10th round is eligible.
	if lines, last := count(10, 100, 2*time.Second); lines != 10 || !last {
		t.Errorf("log every 10 of 100 slow rounds: %d lines, want 10", lines)
	}
}

// TestTrainingLogGrowsWithTimeNotRounds trains 4000 quick rounds for real: the log has at most a
// round line per second plus one per 1% of the rounds, the last round among them, while the
// metadata keeps every round's evaluation.
func TestTrainingLogGrowsWithTimeNotRounds(t *testing.T) {
	const rounds = 4000
	p := DefaultParams()
	p.NumRound, p.MaxDepth, p.NThread = rounds, 1, 1
	var log bytes.Buffer
	job := Job{Params: p, ModelFormat: "json", LogEvery: 1, Log: slog.New(slog.NewTextHandler(&log, nil))}
	runtime.LockOSThread() // as Run does: libxgboost keeps per-thread state
	defer runtime.UnlockOSThread()
	start := time.Now()
	_, _, md, err := boost(job, gangenv.Cluster{WorldSize: 1}, benchData(200, 4), nil, job.Log)
	if err != nil {
		t.Fatal(err)
	}
	seconds := time.Since(start).Seconds()
	lines := strings.Count(log.String(), " msg=round ")
	if bound := 100 + int(math.Ceil(seconds)) + 1; lines > bound {
		t.Errorf("%d rounds in %.1fs: %d round lines, want at most %d", rounds, seconds, lines, bound)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("round=%d of=%d", rounds, rounds)) {
		t.Errorf("the last round has no line")
	}
	if n := len(md.Metrics["train-rmse"]); n != rounds {
		t.Errorf("metadata keeps %d rounds of train-rmse, want %d", n, rounds)
	}
	t.Logf("%d rounds in %.1fs: %d round lines, %d bytes of log", rounds, seconds, lines, log.Len())
}
