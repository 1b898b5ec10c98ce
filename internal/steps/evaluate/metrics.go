package evaluate

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// probEps bounds probabilities away from 0 in the log loss, as XGBoost's logloss and mlogloss do
// (src/metric: eps = 1e-16), so a confidently wrong row counts log(1e-16), not infinity.
const probEps = 1e-16

// Classification holds the running counts of a classifier's evaluation.
type Classification struct {
	Classes   int
	Confusion [][]int // [actual][predicted]
	Rows      int
	Correct   int
	logLoss   float64
	// positive holds, for two classes, each row's probability of class 1 and whether it is
	// class 1: what the AUC ranks.
	positive []scored
}

type scored struct {
	p   float64
	pos bool
}

// NewClassification starts counting for k classes.
func NewClassification(k int) *Classification {
	c := &Classification{Classes: k, Confusion: make([][]int, k)}
	for i := range c.Confusion {
		c.Confusion[i] = make([]int, k)
	}
	return c
}

// Add counts rows: actual class indices, the server's predicted labels and its probabilities
// (n x k, row-major).
func (c *Classification) Add(actual, predicted, proba []float64) error {
	k := c.Classes
	if len(predicted) != len(actual) || len(proba) != len(actual)*k {
		return fmt.Errorf("%d labels, %d predictions and %d probabilities for %d classes", len(actual), len(predicted), len(proba), k)
	}
	for i, a := range actual {
		ai, pi := int(a), int(predicted[i])
		if pi < 0 || pi >= k || float64(pi) != predicted[i] {
			return fmt.Errorf("the server predicted class %v; the model has classes 0..%d", predicted[i], k-1)
		}
		c.Confusion[ai][pi]++
		if ai == pi {
			c.Correct++
		}
		p := proba[i*k+ai]
		if math.IsNaN(p) || p < probEps {
			p = probEps
		}
		c.logLoss -= math.Log(p)
		c.Rows++
		if k == 2 {
			c.positive = append(c.positive, scored{proba[i*k+1], ai == 1})
		}
	}
	return nil
}

// Accuracy is the share of rows whose predicted class is the actual one.
func (c *Classification) Accuracy() float64 { return float64(c.Correct) / float64(max(c.Rows, 1)) }

// LogLoss is the mean negative log probability of the actual class (XGBoost's mlogloss; for
// two classes the same as its logloss).
func (c *Classification) LogLoss() float64 { return c.logLoss / float64(max(c.Rows, 1)) }

// AUC is the area under the ROC curve of a binary classifier's class-1 probabilities: the
// chance that a random class-1 row scores above a random class-0 row, ties counting half
// (Mann-Whitney). NaN for more than two classes or when one class is absent.
func (c *Classification) AUC() float64 {
	if c.Classes != 2 {
		return math.NaN()
	}
	rows := slices.Clone(c.positive)
	slices.SortFunc(rows, func(a, b scored) int { return cmpFloat(a.p, b.p) })
	var pos, neg, rankSum float64
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].p == rows[i].p {
			j++
		}
		// Rows i..j-1 tie: each gets the mean of ranks i+1..j.
		mid := float64(i+1+j) / 2
		for _, r := range rows[i:j] {
			if r.pos {
				pos++
				rankSum += mid
			} else {
				neg++
			}
		}
		i = j
	}
	if pos == 0 || neg == 0 {
		return math.NaN()
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg)
}

// cmpFloat orders NaN first, as if it scored lowest.
func cmpFloat(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a) || a < b:
		return -1
	case math.IsNaN(b) || a > b:
		return 1
	}
	return 0
}

// Regression holds the running sums of a regression's evaluation.
type Regression struct {
	Rows int
	sse  float64
}

// Add counts rows of labels and predictions.
func (r *Regression) Add(actual, predicted []float64) error {
	if len(actual) != len(predicted) {
		return fmt.Errorf("%d labels and %d predictions", len(actual), len(predicted))
	}
	for i, a := range actual {
		d := predicted[i] - a
		r.sse += d * d
		r.Rows++
	}
	return nil
}

// RMSE is the root mean squared error.
func (r *Regression) RMSE() float64 { return math.Sqrt(r.sse / float64(max(r.Rows, 1))) }

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
