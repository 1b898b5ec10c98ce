package train

import (
	"math"
	"time"
)

// roundLog decides which boosting rounds get a progress line. A round takes microseconds on a
// small data set, so a line per round makes the log grow with num_round (400000 rounds in two
// minutes were 400000 lines, copied again by every process that relays them); instead a line is
// due at most once per interval, or once per 1% of the rounds, whichever comes first, and always
// for the last round. Every round's evaluation is still kept (metadata.json). Each line says how
// fast the rounds go and when the last is due (rate).
type roundLog struct {
	every    int // LogEvery: only every k-th round is eligible
	total    int // num_round
	interval time.Duration
	now      func() time.Time

	last     time.Time
	lastStep int // the last percentage of total logged; -1 before the first line

	// The rounds this process boosts start after firstRound (a resumed run's checkpoint) at
	// started: the rate counts only them.
	firstRound int
	started    time.Time
}

func newRoundLog(every, total int) *roundLog {
	return &roundLog{every: max(every, 1), total: max(total, 1), interval: time.Second, now: time.Now, lastStep: -1}
}

// startAt says that boosting starts after round first (0, or the checkpoint's round) at t.
func (g *roundLog) startAt(first int, t time.Time) { g.firstRound, g.started = first, t }

// due reports whether round (1-based) gets a line; final marks the last round (num_round
// reached, or early stopping).
func (g *roundLog) due(round int, final bool) bool {
	if !final && round%g.every != 0 {
		return false
	}
	now := g.now()
	step := int(int64(round) * 100 / int64(g.total))
	if final || step > g.lastStep || now.Sub(g.last) >= g.interval {
		g.last, g.lastStep = now, step
		return true
	}
	return false
}

// rate is the log attributes for round (1-based): rounds per second since boosting started in
// this process, and the estimated seconds to num_round at that rate (eta_s), once a round has
// taken measurable time.
func (g *roundLog) rate(round int) []any {
	if g.started.IsZero() {
		return nil
	}
	elapsed := g.now().Sub(g.started).Seconds()
	done := round - g.firstRound
	if done <= 0 || elapsed <= 0 {
		return nil
	}
	perSecond := float64(done) / elapsed
	eta := float64(g.total-round) / perSecond
	return []any{"rounds_per_s", roundTo(perSecond, 3), "eta_s", roundTo(eta, 1)}
}

// roundTo keeps a figure readable in a log line: digits significant digits (at least the
// integer part).
func roundTo(v float64, digits int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	mag := math.Pow(10, float64(digits-1)-math.Floor(math.Log10(math.Abs(v))))
	if mag < 1 {
		return math.Round(v)
	}
	return math.Round(v*mag) / mag
}
