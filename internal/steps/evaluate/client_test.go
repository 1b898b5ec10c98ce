package evaluate

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := Percentile(ds, 50); p != 50*time.Millisecond {
		t.Errorf("p50 = %s", p)
	}
	if p := Percentile(ds, 99); p != 99*time.Millisecond {
		t.Errorf("p99 = %s", p)
	}
	if Percentile(nil, 50) != 0 || Percentile(ds[:1], 99) != 100*time.Millisecond {
		t.Error("edge cases")
	}
}
