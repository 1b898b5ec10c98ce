package localrun

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gangboost/gangboost/internal/kfp"
)

// The HTML report shows a run's artifacts as KFP's UI shows them (frontend/src/lib/OutputArtifactLoader
// and the v2 MetricsVisualizations): system.Metrics as a table of its scalar metadata,
// system.ClassificationMetrics' confusionMatrix as a matrix, system.HTML and system.Markdown as the
// file the step wrote, and every other artifact (system.Model, system.Dataset) as its URI and
// metadata. It is one self-contained file.

// maxEmbeddedBytes bounds an HTML or Markdown artifact embedded in the report; larger ones are linked.
const maxEmbeddedBytes = 4 << 20

type reportArtifact struct {
	Task, Name, Type, URI string
	Metadata              []kv
	Metrics               []kv
	Matrix                *confusionMatrix
	HTML                  string
	Markdown              string
	Link                  string
	// Local is where a pvc:// artifact is in the folder standing for its claim.
	Local string
}

type kv struct{ Key, Value string }

type confusionMatrix struct {
	Labels []string
	Rows   [][]string
}

func writeReport(res *Result) error {
	f, err := os.Create(res.Report)
	if err != nil {
		return err
	}
	defer f.Close()
	return WriteHTML(f, res)
}

// WriteHTML writes the run's report.
func WriteHTML(w io.Writer, res *Result) error {
	type taskView struct {
		*TaskResult
		InputList, OutputList []kv
		ArtifactList          []reportArtifact
	}
	var tasks []taskView
	for _, t := range res.Tasks {
		tv := taskView{TaskResult: t, InputList: sortedKV(t.Inputs), OutputList: sortedKV(t.Outputs)}
		for _, name := range sortedNames(t.Artifacts) {
			for _, a := range t.Artifacts[name] {
				v := viewArtifact(t.Name, name, a)
				if p, ok := res.ClaimPath(a.URI); ok {
					v.Local = p
				}
				tv.ArtifactList = append(tv.ArtifactList, v)
			}
		}
		tasks = append(tasks, tv)
	}
	return reportTemplate.Execute(w, map[string]any{
		"Res": res, "Params": sortedKV(res.Parameters), "Tasks": tasks,
		"Seconds": res.Seconds,
	})
}

func viewArtifact(task, name string, a ArtifactSummary) reportArtifact {
	v := reportArtifact{Task: task, Name: name, Type: a.Type, URI: a.URI}
	md := a.Metadata
	switch a.Type {
	case "system.Metrics":
		v.Metrics = sortedKV(md)
		return v
	case "system.ClassificationMetrics":
		v.Matrix = parseConfusionMatrix(md["confusionMatrix"])
		rest := map[string]any{}
		for k, x := range md {
			if k != "confusionMatrix" {
				rest[k] = x
			}
		}
		v.Metadata = sortedKV(rest)
		return v
	case "system.HTML", "system.Markdown":
		path, err := kfp.LocalPathForURI(a.URI)
		if err == nil {
			if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Size() <= maxEmbeddedBytes {
				if b, err := os.ReadFile(path); err == nil {
					if a.Type == "system.HTML" {
						v.HTML = string(b)
					} else {
						v.Markdown = string(b)
					}
				}
			} else if err == nil {
				v.Link = "file://" + path
			}
		}
	}
	v.Metadata = sortedKV(md)
	return v
}

// parseConfusionMatrix reads KFP's confusionMatrix metadata: {annotationSpecs: [{displayName}],
// rows: [{row: [n, ...]}]}.
func parseConfusionMatrix(x any) *confusionMatrix {
	m, ok := x.(map[string]any)
	if !ok {
		return nil
	}
	cm := &confusionMatrix{}
	specs, _ := m["annotationSpecs"].([]any)
	for _, s := range specs {
		name := ""
		if sm, ok := s.(map[string]any); ok {
			name, _ = sm["displayName"].(string)
		}
		cm.Labels = append(cm.Labels, name)
	}
	rows, _ := m["rows"].([]any)
	for _, r := range rows {
		rm, _ := r.(map[string]any)
		cells, _ := rm["row"].([]any)
		var row []string
		for _, c := range cells {
			row = append(row, formatValue(c))
		}
		cm.Rows = append(cm.Rows, row)
	}
	if len(cm.Rows) == 0 {
		return nil
	}
	for len(cm.Labels) < len(cm.Rows) {
		cm.Labels = append(cm.Labels, strconv.Itoa(len(cm.Labels)))
	}
	return cm
}

// ConfusionMatrixText formats a system.ClassificationMetrics artifact's confusion matrix as a text
// table (rows: actual, columns: predicted), or "" when it has none.
func ConfusionMatrixText(md map[string]any) string {
	cm := parseConfusionMatrix(md["confusionMatrix"])
	if cm == nil {
		return ""
	}
	width := 6
	for _, l := range cm.Labels {
		width = max(width, len(l)+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%*s", width, "")
	for _, l := range cm.Labels {
		fmt.Fprintf(&b, "%*s", width, l)
	}
	b.WriteString("   (rows: actual, columns: predicted)\n")
	for i, row := range cm.Rows {
		fmt.Fprintf(&b, "%*s", width, cm.Labels[i])
		for _, c := range row {
			fmt.Fprintf(&b, "%*s", width, c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// WriteText writes a plain-text summary of the run: each task's state, output parameters and
// artifacts, metrics and confusion matrices, and where the summary and report are.
func WriteText(w io.Writer, res *Result) {
	fmt.Fprintf(w, "run %s: %s\n", res.Run.RunName, res.State)
	for _, t := range res.Tasks {
		fmt.Fprintf(w, "  %s: %s", t.Name, t.State)
		if t.Seconds > 0 {
			fmt.Fprintf(w, " (%.1fs)", t.Seconds)
		}
		fmt.Fprintln(w)
		for _, p := range sortedKV(t.Outputs) {
			fmt.Fprintf(w, "    %s = %s\n", p.Key, p.Value)
		}
		for _, name := range sortedNames(t.Artifacts) {
			for _, a := range t.Artifacts[name] {
				fmt.Fprintf(w, "    %s (%s): %s\n", name, a.Type, a.URI)
				switch a.Type {
				case "system.Metrics":
					for _, m := range sortedKV(a.Metadata) {
						fmt.Fprintf(w, "      %s: %s\n", m.Key, m.Value)
					}
				case "system.ClassificationMetrics":
					for _, line := range strings.Split(strings.TrimRight(ConfusionMatrixText(a.Metadata), "\n"), "\n") {
						fmt.Fprintf(w, "      %s\n", line)
					}
				}
			}
		}
	}
	fmt.Fprintf(w, "summary: %s\nreport:  %s\n", res.Summary, res.Report)
}

func sortedNames[T any](m map[string]T) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func sortedKV(m map[string]any) []kv {
	out := make([]kv, 0, len(m))
	for _, k := range sortedNames(m) {
		out = append(out, kv{k, formatValue(m[k])})
	}
	return out
}

func formatValue(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', 6, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Res.Run.PipelineName}} · {{.Res.Run.RunName}}</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#202124;max-width:72em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #dadce0;padding-bottom:.2em}
h3{font-size:1em;margin:1em 0 .4em} .muted{color:#5f6368;font-size:.9em}
table{border-collapse:collapse;margin:.4em 0} td,th{border:1px solid #dadce0;padding:.25em .6em;text-align:left;font-size:.9em}
th{background:#f1f3f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.state{font-weight:600;padding:.1em .5em;border-radius:.3em}
.SUCCEEDED{background:#e6f4ea;color:#137333} .FAILED{background:#fce8e6;color:#a50e0e} .CANCELED,.PENDING{background:#f1f3f4;color:#5f6368}
.artifact{border:1px solid #dadce0;border-radius:.4em;padding:.6em 1em;margin:.6em 0}
iframe{width:100%;height:28em;border:1px solid #dadce0} pre{background:#f8f9fa;padding:.6em;overflow:auto;font-size:.85em}
.cm td{text-align:right;min-width:3em}
</style></head><body>
<h1>{{.Res.Run.PipelineName}}</h1>
<div class="muted">run {{.Res.Run.RunName}} · id {{.Res.Run.RunID}} · started {{.Res.Run.Created.Format "2006-01-02 15:04:05 UTC"}} · {{printf "%.1f" .Seconds}}s ·
<span class="state {{.Res.State}}">{{.Res.State}}</span></div>
{{if .Res.Error}}<p><b>Error:</b> {{.Res.Error}}</p>{{end}}
<h2>Pipeline parameters</h2>
<table><tr><th>name</th><th>value</th></tr>{{range .Params}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}</table>
{{range .Tasks}}
<h2>{{.Name}} <span class="state {{.State}}">{{.State}}</span> {{if .Seconds}}<span class="muted">{{printf "%.1f" .Seconds}}s</span>{{end}}</h2>
<div class="muted">component {{.Component}}{{if .Root}} · {{.Root}}{{end}}{{if .LogFile}} · <a href="file://{{.LogFile}}">log</a>{{end}}</div>
{{if .Notes}}<ul class="muted">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Error}}<p><b>Error:</b> {{.Error}}</p>{{end}}
{{if .LogTail}}<h3>Last lines of its log</h3><pre>{{range .LogTail}}{{.}}
{{end}}</pre>{{end}}
{{if .InputList}}<details><summary>Inputs ({{len .InputList}})</summary><table>{{range .InputList}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}</table></details>{{end}}
{{if .OutputList}}<h3>Output parameters</h3><table>{{range .OutputList}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{range .ArtifactList}}<div class="artifact"><h3>{{.Name}} <span class="muted">{{.Type}}</span></h3>
<div class="muted">{{.URI}}{{if .Local}} · on this machine {{.Local}}{{end}}</div>
{{if .Metrics}}<table><tr><th>metric</th><th>value</th></tr>{{range .Metrics}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td></tr>{{end}}</table>{{end}}
{{with .Matrix}}{{$m := .}}<table class="cm"><tr><th>actual \ predicted</th>{{range .Labels}}<th>{{.}}</th>{{end}}</tr>
{{range $i, $row := .Rows}}<tr><th>{{index $m.Labels $i}}</th>{{range $row}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
{{if .HTML}}<iframe sandbox srcdoc="{{.HTML}}"></iframe>{{end}}
{{if .Markdown}}<pre>{{.Markdown}}</pre>{{end}}
{{if .Link}}<p><a href="{{.Link}}">open {{.Name}}</a></p>{{end}}
{{if .Metadata}}<table>{{range .Metadata}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
</div>{{end}}
{{end}}
</body></html>
`))
