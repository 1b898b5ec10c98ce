package train

import "time"

// roundLog decides which boosting rounds get a progress line. A round takes microseconds on a
// small data set, so a line per round makes the log grow with num_round (400000 rounds in two
// minutes were 400000 lines, copied again by every process that relays them); instead a line is
// due at most once per interval, or once per 1% of the rounds, whichever comes first, and always
// for the last round. Every round's evaluation is still kept (metadata.json).
type roundLog struct {
	every    int // LogEvery: only every k-th round is eligible
	total    int // num_round
	interval time.Duration
	now      func() time.Time

	last     time.Time
	lastStep int // the last percentage of total logged; -1 before the first line
}

func newRoundLog(every, total int) *roundLog {
	return &roundLog{every: max(every, 1), total: max(total, 1), interval: time.Second, now: time.Now, lastStep: -1}
}

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
