package evaluate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
)

// evalSet is the name the trainer gives its evaluation set in metric names ("eval-mlogloss").
const evalSet = "eval-"

// Check is one metric the trainer and the served model both measured on the test set.
type Check struct {
	Trainer string  // the trainer's metric, e.g. eval-merror
	Served  string  // what it is compared with, e.g. 1-accuracy
	Want    float64 // the trainer's final value
	Got     float64 // from the served predictions
	OK      bool
}

func (c Check) String() string {
	return fmt.Sprintf("%s %.6g (trainer, final round) vs %s %.6g (served): |diff| %.3g", c.Trainer, c.Want, c.Served, c.Got, math.Abs(c.Got-c.Want))
}

// Compare matches the trainer's final evaluation metrics (metadata.json) with the served ones:
// merror and error with 1-accuracy, mlogloss and logloss with logloss, rmse with rmse. Metrics
// with no served counterpart (auc, ndcg, ...) are left out.
func Compare(md *modeldir.Metadata, s *Summary, tolerance float64) []Check {
	type servedMetric struct {
		name  string
		value float64
	}
	served := map[string]servedMetric{}
	if c := s.Classification; c != nil {
		wrong := servedMetric{"1-accuracy", 1 - c.Accuracy()}
		loss := servedMetric{"logloss", c.LogLoss()}
		served["merror"], served["error"], served["mlogloss"], served["logloss"] = wrong, wrong, loss, loss
	}
	if s.Regression != nil {
		served["rmse"] = servedMetric{"rmse", s.Regression.RMSE()}
	}
	names := make([]string, 0, len(md.Metrics))
	for n := range md.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	var checks []Check
	for _, n := range names {
		values := md.Metrics[n]
		metric, ok := strings.CutPrefix(n, evalSet)
		if !ok || len(values) == 0 {
			continue
		}
		sv, ok := served[metric]
		if !ok {
			continue
		}
		want := values[len(values)-1]
		checks = append(checks, Check{Trainer: n, Served: sv.name, Want: want, Got: sv.value,
			OK: math.Abs(sv.value-want) <= tolerance})
	}
	return checks
}
