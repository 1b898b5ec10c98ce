package localrun

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// A step may print far more than anyone reads: a trainer logging each of 400000 rounds printed
// 74 MB in two minutes, and the run's output repeated it all. The relay bounds both copies of a
// step's output by time rather than by what the step prints: the run's output shows a burst of
// lines and then a steady rate, saying how many it left out; the step's log file keeps everything
// up to a size, then only its last lines.
const (
	relayBurst     = 500      // lines the run's output shows at once
	relayRate      = 20       // lines a second after the burst
	relayLogLimit  = 16 << 20 // bytes of a step's log file before it keeps only the tail
	relayTailLines = 40       // the lines kept for the log's end and a failure's report
	relayRefill    = time.Second / relayRate
)

// relay carries one step's output lines to the run's output (prefixed with the task) and to the
// step's log file.
type relay struct {
	out      io.Writer
	outMu    *sync.Mutex // the run's output is shared by the runner's own lines
	prefix   string
	log      io.Writer
	logPath  string
	logLimit int64
	now      func() time.Time

	mu       sync.Mutex
	tokens   float64
	filled   time.Time
	hidden   int // lines not shown since the last note saying so
	noted    time.Time
	logged   int64 // bytes written to the log
	cut      int   // lines past logLimit, not in the log
	cutBytes int64
	tail     *tailBuffer
}

func newRelay(out io.Writer, outMu *sync.Mutex, task string, log io.Writer, logPath string) *relay {
	return &relay{out: out, outMu: outMu, prefix: "[" + task + "] ", log: log, logPath: logPath, logLimit: relayLogLimit,
		now: time.Now, tokens: relayBurst, tail: newTailBuffer(relayTailLines)}
}

// line relays one line.
func (r *relay) line(s string) {
	r.tail.add(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := int64(len(s)) + 1; r.logged+n <= r.logLimit && r.cut == 0 {
		fmt.Fprintln(r.log, s)
		r.logged += n
	} else {
		r.cut++
		r.cutBytes += n
	}
	now := r.now()
	if !r.filled.IsZero() {
		r.tokens = min(relayBurst, r.tokens+float64(now.Sub(r.filled))/float64(relayRefill))
	}
	r.filled = now
	if r.tokens < 1 {
		r.hidden++
		return
	}
	r.tokens--
	r.outMu.Lock()
	defer r.outMu.Unlock()
	// What was left out is said at most once a second, so the notes do not double the lines.
	if r.hidden > 0 && now.Sub(r.noted) >= time.Second {
		fmt.Fprintf(r.out, "%s... %d lines not shown here (the step's log has them: %s)\n", r.prefix, r.hidden, r.logPath)
		r.hidden, r.noted = 0, now
	}
	fmt.Fprintf(r.out, "%s%s\n", r.prefix, s)
}

// close says what was left out: on the run's output the lines not shown since the last one, in
// the log the lines past its limit, followed by the step's last lines.
func (r *relay) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hidden > 0 {
		r.outMu.Lock()
		fmt.Fprintf(r.out, "%s... %d lines not shown here (the step's log has them: %s)\n", r.prefix, r.hidden, r.logPath)
		r.outMu.Unlock()
		r.hidden = 0
	}
	if r.cut > 0 {
		last := r.tail.get()
		last = last[max(0, len(last)-r.cut):] // only lines the log does not have yet
		fmt.Fprintf(r.log, "... %d lines (%d bytes) past the log's limit of %d bytes are not kept; the step's last %d lines:\n",
			r.cut, r.cutBytes, r.logLimit, len(last))
		for _, l := range last {
			fmt.Fprintln(r.log, l)
		}
	}
}
