package report

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed parses an SVG fragment as XML, as a browser's SVG parser would.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
}

// TestLineChart: one polyline per series with a point per finite value, names escaped, legend
// with the last value; an empty chart says so.
func TestLineChart(t *testing.T) {
	svg := LineChart("learning <curve>", "round", "value", []Series{
		{Name: "train-mlogloss", Y: []float64{0.9, 0.5, 0.3, 0.2}},
		{Name: "eval-mlogloss & co", Y: []float64{1, 0.6, math.NaN(), 0.35}},
	})
	wellFormed(t, svg)
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2", n)
	}
	if !strings.Contains(svg, "learning &lt;curve&gt;") || !strings.Contains(svg, "eval-mlogloss &amp; co 0.35") {
		t.Errorf("title or legend missing:\n%s", svg)
	}
	if strings.Count(strings.SplitN(strings.Split(svg, "<polyline")[2], `points="`, 2)[1], ",") != 3 {
		t.Error("the NaN point was drawn")
	}
	empty := LineChart("none", "round", "value", nil)
	wellFormed(t, empty)
	if !strings.Contains(empty, "no values") {
		t.Error("an empty chart does not say so")
	}
	if LineChart("x", "r", "v", []Series{{Name: "a", Y: []float64{0.5, 0.5}}}) == "" {
		t.Error("flat series")
	}
}

// TestHeatMap: a cell per class pair with its count, the diagonal in blue, shade by row share.
func TestHeatMap(t *testing.T) {
	svg := HeatMap("confusion", []string{"setosa", "versicolor", "<virginica>"}, [][]int{{10, 0, 0}, {0, 9, 1}, {0, 2, 8}})
	wellFormed(t, svg)
	if n := strings.Count(svg, "<rect"); n != 9 {
		t.Errorf("%d cells, want 9", n)
	}
	if !strings.Contains(svg, "actual versicolor, predicted &lt;virginica&gt;: 1") {
		t.Error("cell title missing")
	}
	if fill, _ := shade(1, true); fill != "#0072b2" {
		t.Errorf("full diagonal cell = %s", fill)
	}
	if fill, _ := shade(0, false); fill != "#ffffff" {
		t.Errorf("empty cell = %s", fill)
	}
}

// TestPage: a page holds no script and loads nothing from elsewhere.
func TestPage(t *testing.T) {
	p := string(Page("evaluation <iris>", Section{Heading: "metrics", Table: [][2]string{{"accuracy", "0.97"}}},
		Section{Heading: "confusion", SVG: HeatMap("c", []string{"a", "b"}, [][]int{{1, 0}, {0, 1}})}))
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(p, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(p, "<title>evaluation &lt;iris&gt;</title>") || !strings.Contains(p, "<td>0.97</td>") {
		t.Errorf("page:\n%s", p)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{0.03, 0.97, "0 0.2 0.4 0.6 0.8 1"}, {0.5, 0.5, "0.45 0.5 0.55"}, {3, 212, "0 50 100 150 200 250"}} {
		var got []string
		for _, v := range niceTicks(c.lo, c.hi, 5) {
			got = append(got, tickLabel(v))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("niceTicks(%v, %v) = %v, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

// TestLearningCurve: one chart per metric, each with the train and eval lines.
func TestLearningCurve(t *testing.T) {
	p := string(LearningCurve("iris v1", map[string][]float64{
		"eval-mlogloss": {0.9, 0.5}, "train-mlogloss": {0.8, 0.4}, "eval-merror": {0.1, 0.05}, "train-merror": {0.05, 0},
	}, [2]string{"rounds", "2"}))
	if n := strings.Count(p, "<svg"); n != 2 {
		t.Errorf("%d charts, want 2 (merror, mlogloss)", n)
	}
	if strings.Count(p, "<polyline") != 4 || strings.Index(p, ">merror<") > strings.Index(p, ">mlogloss<") {
		t.Errorf("page:\n%s", p)
	}
	if !strings.Contains(string(LearningCurve("none", nil)), "no metrics") {
		t.Error("an empty run does not say so")
	}
}
