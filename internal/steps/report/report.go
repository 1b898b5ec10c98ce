// Package report draws the charts the components put in their system.HTML artifacts (a line chart
// of per-round metrics, a confusion matrix heat map) as inline SVG, and wraps them in one
// self-contained HTML page: no script and no external asset, since KFP's UI shows the file in a
// sandboxed frame and a cluster may have no internet access.
package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Series is one line of a line chart: Y[i] is the value at round i+1.
type Series struct {
	Name string
	Y    []float64
}

// palette holds distinguishable colours for series (Okabe-Ito, readable with colour blindness).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

const (
	chartW, chartH                     = 640, 360
	padLeft, padRight, padTop, padBott = 64, 160, 32, 48
)

// LineChart draws series against their index (1, 2, ...) as an SVG element.
func LineChart(title, xLabel, yLabel string, series []Series) string {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, s := range series {
		n = max(n, len(s.Y))
		for _, v := range s.Y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="12">`,
		chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, padLeft, esc(title))
	if n == 0 || lo > hi {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no values</text></svg>`, padLeft, chartH/2)
		return b.String()
	}
	ticks := niceTicks(lo, hi, 5)
	lo, hi = min(lo, ticks[0]), max(hi, ticks[len(ticks)-1])
	if hi == lo {
		hi = lo + 1
	}
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBott)
	x := func(i int) float64 {
		if n == 1 {
			return padLeft + plotW/2
		}
		return padLeft + plotW*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return padTop + plotH*(1-(v-lo)/(hi-lo)) }
	// Axes and horizontal grid lines at the ticks.
	for _, tv := range ticks {
		fmt.Fprintf(&b, `<line x1="%d" x2="%s" y1="%s" y2="%s" stroke="#ddd"/>`, padLeft, num(padLeft+plotW), num(y(tv)), num(y(tv)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, num(y(tv)), esc(tickLabel(tv)))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%s" stroke="#333"/>`, padLeft, padLeft, padTop, num(padTop+plotH))
	fmt.Fprintf(&b, `<line x1="%d" x2="%s" y1="%s" y2="%s" stroke="#333"/>`, padLeft, num(padLeft+plotW), num(padTop+plotH), num(padTop+plotH))
	for _, i := range xTicks(n) {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%d</text>`, num(x(i)), num(padTop+plotH+16), i+1)
	}
	fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`, num(padLeft+plotW/2), chartH-8, esc(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`, num(padTop+plotH/2), esc(yLabel))
	for k, s := range series {
		colour := palette[k%len(palette)]
		var pts []string
		for i, v := range s.Y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				pts = append(pts, num(x(i))+","+num(y(v)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`, colour, strings.Join(pts, " "), esc(s.Name))
		ly := padTop + 8 + 18*k
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`, num(padLeft+plotW+12), num(padLeft+plotW+32), ly, ly, colour)
		last := ""
		if len(s.Y) > 0 {
			last = " " + tickLabel(s.Y[len(s.Y)-1])
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" dominant-baseline="middle">%s%s</text>`, num(padLeft+plotW+38), ly, esc(s.Name), esc(last))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// HeatMap draws a confusion matrix: counts[i][j] is the number of rows of actual class labels[i]
// predicted as labels[j]. Each cell's shade is its share of its row, so a rare class's errors
// show as plainly as a common one's.
func HeatMap(title string, labels []string, counts [][]int) string {
	k := len(labels)
	cell := 48
	if k > 12 {
		cell = max(14, 576/k)
	}
	// Column labels are written at a slant so names longer than a cell stay readable.
	left, top := 120, 110
	w, h := left+cell*k+96, top+cell*k+24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="12">`,
		w, h, w, h, esc(title))
	fmt.Fprintf(&b, `<text x="8" y="18" font-size="14" font-weight="bold">%s</text>`, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">predicted</text>`, left+cell*k/2, top+cell*k+18)
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle">actual</text>`, top+cell*k/2)
	for j, l := range labels {
		fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-45)">%s</text>`, left+cell*j+cell/2, top-6, esc(clip(l, 16)))
	}
	for i, l := range labels {
		total := 0
		for _, c := range counts[i] {
			total += c
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, left-6, top+cell*i+cell/2, esc(clip(l, 16)))
		for j := 0; j < k; j++ {
			c := counts[i][j]
			share := 0.0
			if total > 0 {
				share = float64(c) / float64(total)
			}
			fill, ink := shade(share, i == j)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"><title>actual %s, predicted %s: %d</title></rect>`,
				left+cell*j, top+cell*i, cell, cell, fill, esc(labels[i]), esc(labels[j]), c)
			if cell >= 28 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" dominant-baseline="middle" fill="%s">%d</text>`, left+cell*j+cell/2, top+cell*i+cell/2, ink, c)
			}
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// shade maps a cell's share of its row to a fill: blue on the diagonal (right), orange off it
// (wrong), white for none; the text turns white on dark cells.
func shade(share float64, diagonal bool) (fill, ink string) {
	r, g, bl := 0xD5, 0x5E, 0x00
	if diagonal {
		r, g, bl = 0x00, 0x72, 0xB2
	}
	mix := func(c int) int { return int(math.Round(255 - (255-float64(c))*share)) }
	ink = "#000"
	if share > 0.55 {
		ink = "#fff"
	}
	return fmt.Sprintf("#%02x%02x%02x", mix(r), mix(g), mix(bl)), ink
}

// Section is one part of a page: a heading, an optional HTML fragment made by this package
// (SVG), and rows of a two-column table.
type Section struct {
	Heading string
	SVG     string
	Table   [][2]string
	Note    string
}

// Page is a self-contained HTML document of sections.
func Page(title string, sections ...Section) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", esc(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}" +
		"td{border:1px solid #ccc;padding:.25em .6em}td:first-child{color:#555}h2{font-size:1.1em;margin-top:1.5em}</style>\n</head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(title))
	for _, s := range sections {
		if s.Heading != "" {
			fmt.Fprintf(&b, "<h2>%s</h2>\n", esc(s.Heading))
		}
		if s.Note != "" {
			fmt.Fprintf(&b, "<p>%s</p>\n", esc(s.Note))
		}
		if len(s.Table) > 0 {
			b.WriteString("<table>\n")
			for _, row := range s.Table {
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td></tr>\n", esc(row[0]), esc(row[1]))
			}
			b.WriteString("</table>\n")
		}
		if s.SVG != "" {
			b.WriteString(s.SVG)
			b.WriteString("\n")
		}
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func esc(s string) string { return html.EscapeString(s) }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return string(r[:n-1]) + "…"
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// tickLabel prints a value with as few digits as tell ticks apart.
func tickLabel(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// niceTicks returns about n round values (1, 2 or 5 times a power of ten apart) covering lo..hi.
func niceTicks(lo, hi float64, n int) []float64 {
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1e-6)
		lo, hi = lo-d, hi+d
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	if ticks[len(ticks)-1] < hi {
		ticks = append(ticks, ticks[len(ticks)-1]+step)
	}
	return ticks
}

// xTicks picks at most 10 round indices to label on the x axis.
func xTicks(n int) []int {
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000} {
		step = s
		if n/s <= 10 {
			break
		}
	}
	var out []int
	for i := step - 1; i < n; i += step {
		out = append(out, i)
	}
	if step > 1 && (len(out) == 0 || out[0] != 0) {
		out = append([]int{0}, out...)
	}
	return out
}
