package report

import (
	"fmt"
	"sort"
	"strings"
)

// LearningCurve is a page with one line chart per metric of a training run: metrics maps
// "<data set>-<metric>" (as the trainer names them, e.g. eval-mlogloss) to the value per round,
// and each chart holds every data set's line of one metric, since metrics differ in scale.
func LearningCurve(title string, metrics map[string][]float64, notes ...[2]string) []byte {
	byMetric := map[string][]Series{}
	for name, values := range metrics {
		metric := name
		if i := strings.IndexByte(name, '-'); i >= 0 {
			metric = name[i+1:]
		}
		byMetric[metric] = append(byMetric[metric], Series{Name: name, Y: values})
	}
	names := make([]string, 0, len(byMetric))
	for m := range byMetric {
		names = append(names, m)
	}
	sort.Strings(names)
	sections := []Section{}
	if len(notes) > 0 {
		sections = append(sections, Section{Table: notes})
	}
	for _, m := range names {
		series := byMetric[m]
		sort.Slice(series, func(i, j int) bool { return seriesOrder(series[i].Name) < seriesOrder(series[j].Name) })
		sections = append(sections, Section{Heading: m, SVG: LineChart(fmt.Sprintf("%s per round", m), "round", m, series)})
	}
	if len(names) == 0 {
		sections = append(sections, Section{Note: "The trainer recorded no metrics."})
	}
	return Page(title, sections...)
}

// seriesOrder puts the training set's line first, then the others by name.
func seriesOrder(name string) string {
	if strings.HasPrefix(name, "train-") {
		return "0" + name
	}
	return "1" + name
}
