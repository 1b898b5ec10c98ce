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
	}
	return nil
}

// Accuracy is the share of rows whose predicted class is the actual one.
func (c *Classification) Accuracy() float64 { return float64(c.Correct) / float64(max(c.Rows, 1)) }

// LogLoss is the mean negative log probability of the actual class (XGBoost's mlogloss; for
// two classes the same as its logloss).
func (c *Classification) LogLoss() float64 { return c.logLoss / float64(max(c.Rows, 1)) }

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
