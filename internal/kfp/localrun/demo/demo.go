// Package demo turns a local run of the gangboost pipeline (prepare-data, launch-xgboostjob,
// deploy-inferenceservice, evaluate, promote-model) into the summary `make demo` ends with:
// accuracy, confusion matrix, model folder, the promotion's verdict, the endpoint of the model
// that serves, latency of the evaluation calls, a curl line to try one prediction, and where the
// report is.
package demo

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	claimlayout "github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
)

// The pipeline's components, by the name their component specs carry.
const (
	prepareData = "comp-prepare-data"
	launchJob   = "comp-launch-xgboostjob"
	deploy      = "comp-deploy-inferenceservice"
	evaluate    = "comp-evaluate"
	promote     = "comp-promote-model"
)

// Summary is what the demo shows of a run; empty fields were not produced.
type Summary struct {
	State           string
	Seconds         float64
	Workers         string
	Accuracy        string
	RMSE            string
	ConfusionMatrix string
	ModelURI        string
	ModelPath       string
	// Decision is evaluate's verdict on the run's model against the champion; Serving the
	// model that serves after promote-model applied it.
	Decision    string
	Serving     string
	URL         string
	GRPC        string
	ModelName   string
	P50, P99    string
	Calls       string
	Curl        string
	Report      string
	SummaryFile string
}

// RunOptions are the Options of a demo run of the package file with the --param name=value
// overrides (localrun.NewOptions): the steps' output to out and, when the run succeeds, the
// summary after it, while the model server still answers the summary's curl line. keepServing
// leaves the server up after the run, and the summary says which.
func RunOptions(file string, params []string, out io.Writer, keepServing bool) (localrun.Options, error) {
	o, err := localrun.NewOptions(file, params)
	if err != nil {
		return o, err
	}
	o.Out, o.KeepServing = out, keepServing
	o.Finished = func(res *localrun.Result) {
		if res.State == localrun.StateSucceeded {
			Summarize(res).Write(out, keepServing)
		}
	}
	return o, nil
}

// Summarize reads a run's outputs.
func Summarize(res *localrun.Result) Summary {
	s := Summary{State: res.State, Seconds: res.Seconds, Report: res.Report, SummaryFile: res.Summary}
	if w, ok := res.Parameters["workers"]; ok {
		s.Workers = format(w)
	}
	if t := byComponent(res, launchJob); t != nil {
		s.ModelURI = format(t.Outputs["model_uri"])
		if p, ok := res.ClaimPath(s.ModelURI); ok {
			s.ModelPath = p
		}
	}
	if t := byComponent(res, deploy); t != nil {
		s.URL, s.GRPC, s.ModelName = format(t.Outputs["url"]), format(t.Outputs["grpc_address"]), format(t.Outputs["model_name"])
	}
	championURL := ""
	if t := byComponent(res, deploy); t != nil {
		championURL = format(t.Outputs["champion_url"])
	}
	if t := byComponent(res, promote); t != nil {
		s.Serving = format(t.Outputs["serving_model_uri"])
		// A challenger that lost was removed: the champion's endpoint is the service's.
		if format(t.Outputs["promoted"]) == "false" && championURL != "" {
			s.URL, s.GRPC = championURL, ""
		}
	}
	if t := byComponent(res, evaluate); t != nil {
		s.Decision = format(t.Outputs["decision_reason"])
		s.Accuracy = format(t.Outputs["accuracy"])
		if rmse := format(t.Outputs["rmse"]); rmse != "" && rmse != "0" {
			s.RMSE = rmse
		}
		if m := first(t.Artifacts["metrics"]); m != nil {
			s.P50, s.P99, s.Calls = format(m.Metadata["p50_ms"]), format(m.Metadata["p99_ms"]), format(m.Metadata["calls"])
			if s.Accuracy == "" {
				s.Accuracy = format(m.Metadata["accuracy"])
			}
		}
		if cm := first(t.Artifacts["confusion_matrix"]); cm != nil {
			s.ConfusionMatrix = localrun.ConfusionMatrixText(cm.Metadata)
		}
	}
	if s.URL != "" && s.ModelName != "" {
		if row := sampleRow(res); row != nil {
			s.Curl = CurlLine(s.URL, s.ModelName, row)
		}
	}
	return s
}

// CurlLine is a V2 REST infer call for one row of features.
func CurlLine(url, model string, row []float64) string {
	body, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{
		"name": "input-0", "shape": []int{1, len(row)}, "datatype": "FP32", "data": row}}})
	return fmt.Sprintf("curl -s %s/v2/models/%s/infer -H 'Content-Type: application/json' -d '%s'", strings.TrimRight(url, "/"), model, body)
}

// sampleRow is the first row of the test set prepare-data wrote, without its label column.
func sampleRow(res *localrun.Result) []float64 {
	t := byComponent(res, prepareData)
	if t == nil {
		return nil
	}
	claim := format(res.Parameters["pvc_name"])
	if v, ok := t.Inputs["pvc_name"]; ok {
		claim = format(v)
	}
	u, err := claimlayout.NewURI(claim, format(t.Outputs["test_path"]))
	if err != nil {
		return nil
	}
	path, ok := res.ClaimPath(u.String())
	if !ok {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil
	}
	rec, err := r.Read()
	if err != nil || len(rec) != len(header) {
		return nil
	}
	label := format(t.Outputs["label"])
	var row []float64
	for i, h := range header {
		if h == label {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
		if err != nil {
			return nil
		}
		row = append(row, x)
	}
	return row
}

// Write prints the summary.
func (s Summary) Write(w io.Writer, keepServing bool) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-10s %s\n", k, v)
		}
	}
	fmt.Fprintf(w, "\n== gangboost demo: %s", s.State)
	if s.Workers != "" {
		fmt.Fprintf(w, " (1 Master + %s Workers)", s.Workers)
	}
	fmt.Fprintf(w, " in %.1fs ==\n", s.Seconds)
	line("accuracy", s.Accuracy)
	line("rmse", s.RMSE)
	if s.ConfusionMatrix != "" {
		fmt.Fprintln(w, "  confusion matrix:")
		for _, l := range strings.Split(strings.TrimRight(s.ConfusionMatrix, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	model := s.ModelPath
	if model != "" && s.ModelURI != "" {
		model += " (" + s.ModelURI + ")"
	}
	line("model", model)
	line("decision", s.Decision)
	if s.Serving != "" && s.Serving != s.ModelURI {
		line("serving", s.Serving+" (the champion, kept)")
	}
	endpoint := s.URL
	if endpoint != "" && s.GRPC != "" {
		endpoint += " (REST), " + s.GRPC + " (gRPC)"
	}
	line("endpoint", endpoint)
	if s.P50 != "" || s.P99 != "" {
		lat := fmt.Sprintf("p50 %s ms, p99 %s ms", s.P50, s.P99)
		if s.Calls != "" {
			lat += " over " + s.Calls + " calls"
		}
		line("latency", lat)
	}
	if s.Curl != "" {
		if keepServing {
			line("try", s.Curl)
		} else {
			line("try", s.Curl)
			fmt.Fprintln(w, "             (the endpoint stopped with the run: --keep-serving, or make demo DEMO_FLAGS=--keep-serving, keeps it up)")
		}
	}
	line("report", s.Report)
	line("summary", s.SummaryFile)
	if s.ModelPath != "" {
		line("metadata", filepath.Join(s.ModelPath, "metadata.json"))
	}
}

func byComponent(res *localrun.Result, component string) *localrun.TaskResult {
	for _, t := range res.Tasks {
		if t.Component == component {
			return t
		}
	}
	return nil
}

func first(a []localrun.ArtifactSummary) *localrun.ArtifactSummary {
	if len(a) == 0 {
		return nil
	}
	return &a[0]
}

func format(x any) string {
	switch v := x.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
			// A count (workers, rows, calls) is shown whole: 4294967296, not 4.29497e+09.
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	default:
		return fmt.Sprint(v)
	}
}
