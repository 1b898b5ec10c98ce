package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/promote/policy"
	"github.com/gangboost/gangboost/internal/steps/register"
	"github.com/gangboost/gangboost/internal/steps/storecreds"
)

// The evaluate component's outputs (components/evaluate/component.yaml).
const (
	OutputMetrics         = "metrics"          // system.Metrics
	OutputConfusionMatrix = "confusion_matrix" // system.ClassificationMetrics
	OutputReport          = "report"           // system.HTML
	OutputAccuracy        = "accuracy"
	OutputRMSE            = "rmse"
	// The contest with the champion (champion_url given): its metrics beside the challenger's,
	// the verdict as a page and as the promote parameter promote-model acts on.
	OutputChampionMetrics         = "champion_metrics"          // system.Metrics
	OutputChampionConfusionMatrix = "champion_confusion_matrix" // system.ClassificationMetrics
	OutputDecision                = "decision"                  // system.Markdown
	OutputPromote                 = "promote"                   // "true" or "false"
	OutputDecisionReason          = "decision_reason"
)

// Inputs are the component's input parameters.
var Inputs = []kfp.Input{
	{Name: "url", Type: kfp.String, Description: "the V2 base URL (deploy-inferenceservice's url), e.g. http://iris-predictor.ns.svc.cluster.local"},
	{Name: "model_name", Type: kfp.String, Description: "the model's name on the endpoint"},
	{Name: "test_path", Type: kfp.String, Description: "the test CSV on the claim (prepare-data's test_path)"},
	{Name: "label", Type: kfp.String, Description: "the label column"},
	{Name: "model_uri", Type: kfp.String, Default: "", Description: "pvc://<claim>/models/<model>/<version> or s3://<bucket>/<prefix>/<model>/<version>/: compare with the trainer's metadata.json there; empty: no comparison"},
	{Name: "object_store_endpoint", Type: kfp.String, Default: "", Description: "endpoint of an s3:// model_uri (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or object_store_secret)"},
	{Name: "object_store_region", Type: kfp.String, Default: "", Description: "object store region; default the bucket's"},
	{Name: "object_store_path_style", Type: kfp.String, Default: "false", Description: "true: address buckets as endpoint/bucket (MinIO, Ceph)"},
	{Name: "tolerance", Type: kfp.Double, Default: 0.02, Description: "largest allowed |served - trainer| per compared metric; negative: report only"},
	{Name: "protocol", Type: kfp.String, Default: ProtocolBoth, Description: "json, binary, or both (each batch both ways; the answers must agree exactly)"},
	{Name: "timeout_seconds", Type: kfp.Integer, Default: 120, Description: "how long to wait for the model to be ready"},
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding data and models"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where this step mounts the claim"},
	{Name: "auth_token_path", Type: kfp.String, Default: "", Description: "a file holding a bearer token sent as Authorization with every call (an endpoint behind an authorization policy), e.g. /var/run/secrets/kubernetes.io/serviceaccount/token; empty: none"},
	{Name: "champion_url", Type: kfp.String, Default: "", Description: "the V2 base URL of the model serving today (deploy-inferenceservice's champion_url): measured on the same test set, and the new model (url) promoted only if it wins; empty: no champion, the new model serves"},
	{Name: "champion_model_uri", Type: kfp.String, Default: "", Description: "the champion's model folder (deploy-inferenceservice's champion_model_uri)"},
	{Name: "promote_policy", Type: kfp.String, Default: policy.IfBetter, Description: "if-better: promote only a challenger better by promote_metric; always; never"},
	{Name: "promote_metric", Type: kfp.String, Default: "", Description: "logloss, accuracy, auc (binary) or rmse; empty: logloss for classifiers, rmse for regression"},
	{Name: "min_improvement", Type: kfp.Double, Default: 0.0, Description: "how much better the challenger must be under if-better, in the metric's units"},
	{Name: "run_id", Type: kfp.String, Default: "", Description: "the run ({{$.pipeline_job_uuid}}), recorded with the model version in the registry"},
}

func init() { Inputs = append(append(Inputs, storecreds.Inputs...), register.Inputs...) }

// Component is the evaluate component run from image; component.yaml is generated from it.
func Component(image string) *kfp.Component {
	return &kfp.Component{
		Name:        "evaluate",
		Description: "Sends the test set to a V2 endpoint (JSON and binary tensors) and reports accuracy, log loss and a confusion matrix (or RMSE), call latency, and whether the served model agrees with the trainer's own evaluation.",
		Image:       image,
		Inputs:      Inputs,
		Outputs: []kfp.Output{
			{Name: OutputMetrics, Artifact: "system.Metrics", Description: "accuracy and logloss (or rmse), rows, calls, p50_ms, p99_ms"},
			{Name: OutputConfusionMatrix, Artifact: "system.ClassificationMetrics", Description: "the confusion matrix (classifiers; empty for regression)"},
			{Name: OutputReport, Artifact: "system.HTML", Description: "metrics, the comparison with the trainer and the confusion matrix as one page"},
			{Name: OutputAccuracy, Type: kfp.Double, Description: "accuracy; 0 for regression"},
			{Name: OutputRMSE, Type: kfp.Double, Description: "RMSE; 0 for classifiers"},
			{Name: OutputChampionMetrics, Artifact: "system.Metrics", Description: "the champion's metrics on the same test set (empty without a champion)"},
			{Name: OutputChampionConfusionMatrix, Artifact: "system.ClassificationMetrics", Description: "the champion's confusion matrix (empty without a champion, and for regression)"},
			{Name: OutputDecision, Artifact: "system.Markdown", Description: "champion and challenger side by side, and the verdict"},
			{Name: OutputPromote, Type: kfp.String, Description: "true: the new model takes the traffic (it won, or there is no champion); false: the champion keeps it"},
			{Name: OutputDecisionReason, Type: kfp.String, Description: "the verdict in one sentence"},
		},
	}
}

// RunExecutor runs the component: it evaluates and writes the outputs. When the served model
// disagrees with the trainer the outputs are still written (the report says why) and the error
// is returned, so the step fails. secrets reads object_store_secret for an s3:// model_uri when
// the environment has no credentials.
func RunExecutor(ctx context.Context, e *kfp.Executor, secrets storecreds.Reader, log io.Writer) error {
	in := e.Params(Inputs)
	str := in.String
	tolerance := in.Float("tolerance", 0.02)
	timeout := in.IntIn("timeout_seconds", 120, 0, math.MaxInt32)
	o := Options{
		URL: str("url", ""), Model: str("model_name", ""), TestPath: str("test_path", ""), Label: str("label", ""),
		ModelURI: str("model_uri", ""), Tolerance: tolerance, Protocol: str("protocol", ProtocolBoth),
		Timeout: time.Duration(timeout) * time.Second, Claim: str("pvc_mount_path", "/mnt/pvc"), ClaimName: str("pvc_name", "gangboost-models"),
		Log: log, AuthTokenPath: str("auth_token_path", ""),
		ObjectStore: objectstore.FromInputs(str),
	}
	champion := Rival{URL: str("champion_url", ""), ModelURI: str("champion_model_uri", "")}
	p := PolicyInputs{Mode: str("promote_policy", policy.IfBetter), Metric: str("promote_metric", ""), MinImprovement: in.Float("min_improvement", 0)}
	runID := str("run_id", "")
	regURL, regToken := str("registry_url", ""), str("registry_token_path", "")
	secret := storecreds.FromInputs(str)
	if err := in.Err(); err != nil {
		return err
	}
	if err := secret.Apply(ctx, secrets, o.ModelURI, &o.ObjectStore, log); err != nil {
		return err
	}
	// A registry that cannot be reached is found before any evaluation; nothing is written then.
	reg, err := register.FromInputs(regURL, regToken)
	if err != nil {
		return err
	}
	if reg == nil {
		fmt.Fprintln(log, register.Skipped)
	}
	if champion.URL != "" {
		c, err := RunContest(ctx, o, champion, p)
		if err != nil {
			return err
		}
		if err := registerModel(ctx, reg, o, c.Challenger, runID, log); err != nil {
			return err
		}
		return writeContestOutputs(e, c)
	}
	if err := p.check(); err != nil {
		return err
	}
	s, runErr := Run(ctx, o)
	var disagree *DisagreementError
	if runErr != nil && !errors.As(runErr, &disagree) {
		return runErr
	}
	if err := registerModel(ctx, reg, o, s, runID, log); err != nil {
		return err
	}
	reason := fmt.Sprintf("%s serves: no champion to compare with", version(o.ModelURI, o.Model))
	if err := writeDecision(e, runErr == nil, reason, decisionPage(nil, reason)); err != nil {
		return err
	}
	if err := writeChampion(e, nil); err != nil {
		return err
	}
	if err := writeOutputs(e, s); err != nil {
		return err
	}
	return runErr
}

// registerModel records the evaluated model version in the registry (reg nil: not configured):
// the trainer's metrics from s's metadata.json and evaluate's own. Without a model_uri there is no
// version to record.
func registerModel(ctx context.Context, reg *register.Client, o Options, s *Summary, runID string, log io.Writer) error {
	if reg == nil {
		return nil
	}
	if o.ModelURI == "" {
		fmt.Fprintln(log, "model registry: no model_uri, so no model version to register")
		return nil
	}
	m := register.Model{Name: o.Model, Version: register.VersionOf(o.ModelURI), URI: o.ModelURI, RunID: runID, Evaluated: map[string]float64{}}
	if s != nil {
		m.Trainer = s.Trainer
		for name, v := range s.Metrics() {
			switch x := v.(type) {
			case float64:
				m.Evaluated[name] = x
			case int:
				m.Evaluated[name] = float64(x)
			}
		}
	}
	rec, err := reg.RegisterVersion(ctx, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "model registry: %s/%s registered (registered model %s, version %s, artifact %s)\n", m.Name, m.Version, rec.RegisteredModelID, rec.ModelVersionID, rec.ModelArtifactID)
	return nil
}

// writeContestOutputs writes a contest's outputs: the challenger's as a lone evaluation writes
// them (empty where it failed), the champion's beside them, the verdict. A challenger that lost
// is not the step's failure: promote-model removes it and the champion keeps serving.
func writeContestOutputs(e *kfp.Executor, c *Contest) error {
	if err := writeDecision(e, c.Decision.Promote, c.Decision.Reason, decisionPage(c, c.Decision.Reason)); err != nil {
		return err
	}
	if err := writeChampion(e, c.Champion); err != nil {
		return err
	}
	s := c.Challenger
	if s == nil {
		s = &Summary{Notes: []string{"the challenger's evaluation failed: " + c.ChallengerFailure}}
	}
	s.Contest = c
	return writeOutputs(e, s)
}

func writeDecision(e *kfp.Executor, promote bool, reason string, page []byte) error {
	if err := e.SetParameter(OutputPromote, strconv.FormatBool(promote)); err != nil {
		return err
	}
	if err := e.SetParameter(OutputDecisionReason, reason); err != nil {
		return err
	}
	if err := e.SetArtifact(OutputDecision, "", map[string]any{"promote": promote}); err != nil {
		return err
	}
	return writeArtifact(e, OutputDecision, page)
}

// writeChampion writes the champion's metrics and confusion matrix (empty without one).
func writeChampion(e *kfp.Executor, s *Summary) error {
	metrics, confusion := map[string]any{}, map[string]any{}
	if s != nil {
		metrics, confusion = s.Metrics(), s.ConfusionMatrix()
	}
	return writeMetadataArtifacts(e, map[string]map[string]any{OutputChampionMetrics: metrics, OutputChampionConfusionMatrix: confusion})
}

// writeMetadataArtifacts records each artifact's metadata and writes the same values as its
// file, so a download from the UI shows what the metadata says.
func writeMetadataArtifacts(e *kfp.Executor, artifacts map[string]map[string]any) error {
	for name, md := range artifacts {
		if err := e.SetArtifact(name, "", md); err != nil {
			return err
		}
		js, err := json.MarshalIndent(md, "", "  ")
		if err != nil {
			return err
		}
		if err := writeArtifact(e, name, append(js, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// Metrics are the scalar values of the system.Metrics artifact.
func (s *Summary) Metrics() map[string]any {
	m := map[string]any{
		"rows": s.Rows, "calls": s.Calls(), "batch_rows": s.BatchRows,
		"p50_ms": ms(Percentile(s.Latencies, 50)), "p99_ms": ms(Percentile(s.Latencies, 99)),
	}
	if c := s.Classification; c != nil {
		m["accuracy"], m["logloss"] = c.Accuracy(), c.LogLoss()
		if auc := c.AUC(); !math.IsNaN(auc) {
			m["auc"] = auc
		}
	}
	if r := s.Regression; r != nil {
		m["rmse"] = r.RMSE()
	}
	return m
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ConfusionMatrix is the system.ClassificationMetrics metadata KFP's UI draws: rows are the
// actual classes, columns the predicted ones.
func (s *Summary) ConfusionMatrix() map[string]any {
	if s.Classification == nil {
		return map[string]any{}
	}
	specs := make([]any, len(s.ClassNames))
	for i, n := range s.ClassNames {
		specs[i] = map[string]any{"displayName": n}
	}
	rows := make([]any, len(s.Classification.Confusion))
	for i, r := range s.Classification.Confusion {
		row := make([]any, len(r))
		for j, c := range r {
			row[j] = c
		}
		rows[i] = map[string]any{"row": row}
	}
	return map[string]any{"confusionMatrix": map[string]any{"annotationSpecs": specs, "rows": rows}}
}

func writeOutputs(e *kfp.Executor, s *Summary) error {
	metrics, confusion := s.Metrics(), s.ConfusionMatrix()
	accuracy, rmse := 0.0, 0.0
	if s.Classification != nil {
		accuracy = s.Classification.Accuracy()
	}
	if s.Regression != nil {
		rmse = s.Regression.RMSE()
	}
	if err := e.SetParameter(OutputAccuracy, accuracy); err != nil {
		return err
	}
	if err := e.SetParameter(OutputRMSE, rmse); err != nil {
		return err
	}
	// Each artifact's file holds what its metadata says (the HTML page for the report), so a
	// download from the UI shows the same values.
	if err := writeMetadataArtifacts(e, map[string]map[string]any{OutputMetrics: metrics, OutputConfusionMatrix: confusion}); err != nil {
		return err
	}
	if err := e.SetArtifact(OutputReport, "", map[string]any{}); err != nil {
		return err
	}
	if err := writeArtifact(e, OutputReport, Report(s)); err != nil {
		return err
	}
	return e.WriteOutput()
}

func writeArtifact(e *kfp.Executor, name string, data []byte) error {
	p, err := e.OutputArtifactPath(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write artifact %s: %w", name, err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("write artifact %s: %w", name, err)
	}
	return nil
}
