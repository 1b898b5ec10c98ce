package evaluate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/steps/report"
)

// contestRow is one line of the side-by-side comparison: a label and each side's value.
type contestRow struct{ label, champion, challenger string }

// rows compares the two sides metric by metric, then latency and failures.
func (c *Contest) rows() []contestRow {
	metric := func(s *Summary, name string) string {
		if s == nil {
			return "-"
		}
		v, ok := s.Metrics()[name].(float64)
		if !ok || math.IsNaN(v) {
			return "-"
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	latency := func(s *Summary, p float64) string {
		if s == nil || len(s.Latencies) == 0 {
			return "-"
		}
		return Percentile(s.Latencies, p).Round(time.Microsecond).String()
	}
	failures := func(failure string) string {
		if failure == "" {
			return "0"
		}
		return "1: " + failure
	}
	out := []contestRow{{"model", orName(c.ChampionModelURI, "-"), orName(c.ChallengerModelURI, "-")}}
	for _, name := range []string{"logloss", "accuracy", "auc", "rmse"} {
		if a, b := metric(c.Champion, name), metric(c.Challenger, name); a != "-" || b != "-" {
			label := name
			if name == c.Decision.Metric {
				label += " (decides)"
			}
			out = append(out, contestRow{label, a, b})
		}
	}
	return append(out,
		contestRow{"latency p50", latency(c.Champion, 50), latency(c.Challenger, 50)},
		contestRow{"latency p99", latency(c.Champion, 99), latency(c.Challenger, 99)},
		contestRow{"failed evaluations", failures(c.ChampionFailure), failures(c.ChallengerFailure)})
}

// policyLine says the rule the verdict followed.
func (c *Contest) policyLine() string {
	dir := "higher is better"
	if c.Policy.Metric.LowerIsBetter {
		dir = "lower is better"
	}
	return fmt.Sprintf("promote_policy %s by %s (%s), min_improvement %g", c.Policy.Mode, c.Policy.Metric.Name, dir, c.Policy.MinImprovement)
}

// decisionPage is the system.Markdown artifact: the verdict, and with a champion both sides in
// one table and both confusion matrices.
func decisionPage(c *Contest, reason string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Promotion\n\n**%s**\n\n", mdEscape(reason))
	if c == nil {
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "%s.\n\n| | champion | challenger |\n| --- | --- | --- |\n", mdEscape(c.policyLine()))
	for _, r := range c.rows() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(r.label), mdEscape(r.champion), mdEscape(r.challenger))
	}
	for _, s := range []struct {
		title string
		sum   *Summary
	}{{"champion", c.Champion}, {"challenger", c.Challenger}} {
		if s.sum == nil || s.sum.Classification == nil {
			continue
		}
		fmt.Fprintf(&b, "\n## Confusion matrix of the %s (rows: actual, columns: predicted)\n\n|", s.title)
		for _, n := range s.sum.ClassNames {
			fmt.Fprintf(&b, " | %s", mdEscape(n))
		}
		b.WriteString(" |\n|---" + strings.Repeat("|---", len(s.sum.ClassNames)) + "|\n")
		for i, row := range s.sum.Classification.Confusion {
			fmt.Fprintf(&b, "| %s", mdEscape(s.sum.ClassNames[i]))
			for _, n := range row {
				fmt.Fprintf(&b, " | %d", n)
			}
			b.WriteString(" |\n")
		}
	}
	return []byte(b.String())
}

// contestSections are the report's sections about the champion: the side-by-side table and its
// confusion matrix.
func contestSections(c *Contest) []report.Section {
	sec := report.Section{Heading: "Champion vs challenger", Note: c.Decision.Reason + ". " + c.policyLine() + "."}
	for _, r := range c.rows() {
		sec.Table = append(sec.Table, [2]string{r.label, "champion " + r.champion + " · challenger " + r.challenger})
	}
	out := []report.Section{sec}
	if s := c.Champion; s != nil && s.Classification != nil {
		out = append(out, report.Section{Heading: "Confusion matrix of the champion",
			SVG: report.HeatMap("rows: actual class, columns: predicted class", s.ClassNames, s.Classification.Confusion)})
	}
	return out
}

// mdEscape keeps a value inside its table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}
