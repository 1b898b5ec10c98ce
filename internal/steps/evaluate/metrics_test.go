package evaluate

import (
	"math"
	"testing"
)

// AUC by ranks, checked against pairs counted by hand.
func TestAUC(t *testing.T) {
	cases := []struct {
		actual []float64
		p1     []float64
		want   float64
	}{
		{[]float64{0, 0, 1, 1}, []float64{0.1, 0.4, 0.35, 0.8}, 0.75}, // 3 of 4 pairs ordered
		{[]float64{0, 1}, []float64{0.2, 0.9}, 1},
		{[]float64{0, 1}, []float64{0.9, 0.2}, 0},
		{[]float64{0, 1, 0, 1}, []float64{0.5, 0.5, 0.5, 0.5}, 0.5}, // ties count half
		{[]float64{1, 1}, []float64{0.5, 0.7}, math.NaN()},          // one class only
	}
	for _, c := range cases {
		cl := NewClassification(2)
		pred := make([]float64, len(c.actual))
		proba := make([]float64, 0, 2*len(c.actual))
		for i, p := range c.p1 {
			if p >= 0.5 {
				pred[i] = 1
			}
			proba = append(proba, 1-p, p)
		}
		if err := cl.Add(c.actual, pred, proba); err != nil {
			t.Fatal(err)
		}
		if got := cl.AUC(); got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("AUC(%v, %v) = %v, want %v", c.actual, c.p1, got, c.want)
		}
	}
	if got := NewClassification(3).AUC(); !math.IsNaN(got) {
		t.Errorf("AUC of three classes = %v, want NaN", got)
	}
}
