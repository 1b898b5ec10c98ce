package train

import (
	"fmt"
	"strconv"
	"strings"
)

// Metric is one evaluation result of a round, e.g. eval-mlogloss = 0.21.
type Metric struct {
	Name  string // "<dataset>-<metric>", as libxgboost prints it
	Value float64
}

// parseEvalLine reads libxgboost's EvalOneIter line: "[3]\ttrain-rmse:0.12\teval-rmse:0.2".
func parseEvalLine(line string) ([]Metric, error) {
	fields := strings.Split(strings.TrimSpace(line), "\t")
	var out []Metric
	for _, f := range fields[1:] {
		i := strings.LastIndexByte(f, ':')
		if i < 0 {
			return nil, fmt.Errorf("evaluation line %q: field %q has no value", line, f)
		}
		v, err := strconv.ParseFloat(f[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("evaluation line %q: field %q: %w", line, f, err)
		}
		out = append(out, Metric{Name: f[:i], Value: v})
	}
	return out, nil
}

// maximised reports whether a larger value of the metric is better, as XGBoost's early-stopping
// callback decides it.
func maximised(metric string) bool {
	name := metric
	if i := strings.IndexByte(name, '-'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "auc", "aucpr", "map", "ndcg", "pre", "interval-regression-accuracy":
		return true
	}
	return false
}

// earlyStopper follows the last metric of the last evaluation set, as XGBoost does.
type earlyStopper struct {
	patience  int
	best      float64
	bestRound int
	seen      bool
}

// observe records a round's score and reports whether training should stop.
func (e *earlyStopper) observe(round int, m Metric) bool {
	better := !e.seen || (maximised(m.Name) && m.Value > e.best) || (!maximised(m.Name) && m.Value < e.best)
	if better {
		e.best, e.bestRound, e.seen = m.Value, round, true
		return false
	}
	return e.patience > 0 && round-e.bestRound >= e.patience
}
