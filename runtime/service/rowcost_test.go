package service

import (
	"testing"
	"time"
)

// A sample the scheduler interrupts does not decide a model's cost: one call that stalls for
// twice the measuring budget (as a preempted or CPU-throttled start would) leaves the cost at
// the other samples', and the measuring still takes its minimum of samples.
func TestFastestSampleIgnoresAnInterruptedSample(t *testing.T) {
	calls := 0
	got := fastestSample(func() {
		calls++
		if calls == costWarmupCalls+2 { // in the first measured sample
			time.Sleep(2 * costBudget)
		}
	})
	if samples := (calls - costWarmupCalls) / costSampleCalls; samples != costMinSamples || (calls-costWarmupCalls)%costSampleCalls != 0 {
		t.Errorf("%d calls: want %d unmeasured and %d samples of %d", calls, costWarmupCalls, costMinSamples, costSampleCalls)
	}
	// The calls of the other samples do nothing; only a hang of theirs could come near this.
	if limit := costBudget / costSampleCalls; got >= limit {
		t.Errorf("cost %v: the interrupted sample decided it (want under %v)", got, limit)
	}
}
