package evaluate

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gangboost/gangboost/internal/steps/report"
)

// Report is the evaluation as one self-contained HTML page (the system.HTML artifact).
func Report(s *Summary) []byte {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	summary := [][2]string{
		{"endpoint", s.URL}, {"model", s.Model}, {"test set", s.TestPath},
		{"rows", strconv.Itoa(s.Rows)}, {"features", strconv.Itoa(s.Features)},
		{"protocol", s.Protocol}, {"calls", fmt.Sprintf("%d (up to %d rows each)", s.Calls(), s.BatchRows)},
		{"latency p50", Percentile(s.Latencies, 50).Round(time.Microsecond).String()},
		{"latency p99", Percentile(s.Latencies, 99).Round(time.Microsecond).String()},
	}
	if s.Objective != "" {
		summary = append(summary, [2]string{"objective", s.Objective})
	}
	if c := s.Classification; c != nil {
		summary = append(summary, [2]string{"accuracy", f(c.Accuracy())}, [2]string{"log loss", f(c.LogLoss())})
	}
	if r := s.Regression; r != nil {
		summary = append(summary, [2]string{"RMSE", f(r.RMSE())})
	}
	sections := []report.Section{{Heading: "Summary", Table: summary}}
	if s.Contest != nil {
		sections = append(sections, contestSections(s.Contest)...)
	}
	if s.ModelDir != "" {
		sec := report.Section{Heading: "Served model vs the trainer's evaluation",
			Note: fmt.Sprintf("Final-round metrics in %s/metadata.json against the same metric from the served predictions; tolerance %g.", s.ModelDir, s.Tolerance)}
		for _, c := range s.Checks {
			verdict := "agrees"
			if !c.OK {
				verdict = "DISAGREES"
			}
			sec.Table = append(sec.Table, [2]string{c.Trainer + " vs " + c.Served, fmt.Sprintf("%s vs %s: %s", f(c.Want), f(c.Got), verdict)})
		}
		sections = append(sections, sec)
	}
	if c := s.Classification; c != nil {
		sections = append(sections, report.Section{Heading: "Confusion matrix",
			SVG: report.HeatMap("rows: actual class, columns: predicted class", s.ClassNames, c.Confusion)})
		var per [][2]string
		for i, name := range s.ClassNames {
			tp, actual, predicted := c.Confusion[i][i], 0, 0
			for j := range s.ClassNames {
				actual += c.Confusion[i][j]
				predicted += c.Confusion[j][i]
			}
			per = append(per, [2]string{name, fmt.Sprintf("recall %s (%d/%d), precision %s (%d/%d)",
				ratio(tp, actual), tp, actual, ratio(tp, predicted), tp, predicted)})
		}
		sections = append(sections, report.Section{Heading: "Per class", Table: per})
	}
	for _, n := range s.Notes {
		sections = append(sections, report.Section{Note: n})
	}
	return report.Page("Evaluation of "+s.Model, sections...)
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 3, 64)
}
