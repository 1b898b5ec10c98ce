package localrun

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRelayIsBoundedByTime: 400000 lines in two minutes show as the burst plus the rate's lines
// a second, each gap said; the log keeps everything up to its limit, then the step's last lines.
func TestRelayIsBoundedByTime(t *testing.T) {
	var out, log bytes.Buffer
	clock := time.Unix(0, 0)
	r := newRelay(&out, &sync.Mutex{}, "train", &log, "/w/executor-logs")
	r.now = func() time.Time { return clock }
	r.logLimit = 1 << 20
	const lines = 400000
	for i := 1; i <= lines; i++ {
		clock = clock.Add(300 * time.Microsecond) // 120 s in all
		r.line(fmt.Sprintf("level=INFO msg=round round=%d of=%d train-rmse=0.5", i, lines))
	}
	r.close()
	shown := strings.Count(out.String(), "msg=round")
	if max := relayBurst + relayRate*120 + 1; shown > max || shown < relayBurst {
		t.Errorf("the run's output shows %d of %d lines, want %d to %d", shown, lines, relayBurst, max)
	}
	if !strings.Contains(out.String(), "[train] ... ") || !strings.Contains(out.String(), "lines not shown here (the step's log has them: /w/executor-logs)") {
		t.Errorf("the run's output does not say what it left out:\n%s", out.String()[:2000])
	}
	if !strings.Contains(out.String(), fmt.Sprintf("round=%d ", lines)) && !strings.HasSuffix(out.String(), "/w/executor-logs)\n") {
		t.Errorf("the output ends neither with the last line nor with what it left out")
	}
	if log.Len() > 1<<20+relayTailLines*100+200 {
		t.Errorf("the log has %d bytes, want at most its limit and the tail", log.Len())
	}
	if !strings.Contains(log.String(), "past the log's limit of 1048576 bytes are not kept; the step's last 40 lines:") ||
		!strings.HasSuffix(log.String(), fmt.Sprintf("round=%d of=%d train-rmse=0.5\n", lines, lines)) {
		t.Errorf("the log does not end with the note and the last lines:\n%s", log.String()[log.Len()-3000:])
	}
	t.Logf("400000 lines in 120s: %d lines (%d bytes) on the run's output, %d bytes of log", strings.Count(out.String(), "\n"), out.Len(), log.Len())
}

// TestRunRelaysAChattyStepBounded: a step printing 20000 lines at once shows at most the burst
// and the rate's lines on the run's output; its log has them all.
func TestRunRelaysAChattyStepBounded(t *testing.T) {
	bin := buildSteps(t)
	work := t.TempDir()
	var out syncBuffer
	start := time.Now()
	res, err := Run(context.Background(), Options{
		Package: tinyPackage(t), WorkDir: work, BinDir: bin, Out: &out, Grace: time.Second,
		Params: map[string]string{"message": "hi", "behave": "produce=chatty"},
	})
	seconds := time.Since(start).Seconds()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	shown := strings.Count(out.String(), "msg=round")
	if max := relayBurst + relayRate*int(math.Ceil(seconds)); shown > max {
		t.Errorf("the run's output shows %d of 20000 lines in %.1fs, want at most %d", shown, seconds, max)
	}
	if !strings.Contains(out.String(), "lines not shown here (the step's log has them: "+res.Tasks[0].LogFile+")") {
		t.Errorf("the run's output does not say where the lines are")
	}
	b, err := os.ReadFile(res.Tasks[0].LogFile)
	if err != nil || strings.Count(string(b), "msg=round") != 20000 {
		t.Errorf("the step's log has %d round lines (%v), want 20000", strings.Count(string(b), "msg=round"), err)
	}
	t.Logf("20000 lines in %.1fs: %d shown, %d bytes of run output", seconds, shown, len(out.String()))
}
