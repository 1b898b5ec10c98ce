package promote

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/register"
)

// The promote-model component's outputs (components/promote-model/component.yaml).
const (
	OutputPromoted         = "promoted"           // "true" or "false"
	OutputServingModelURI  = "serving_model_uri"  // what the service serves now
	OutputPreviousModelURI = "previous_model_uri" // what it served before ("" when nothing)
)

// Inputs are the component's input parameters.
var Inputs = []kfp.Input{
	{Name: "name", Type: kfp.String, Description: "the InferenceService (deploy-inferenceservice's name)"},
	{Name: "model_uri", Type: kfp.String, Description: "the run's model (launch-xgboostjob's model_uri)"},
	{Name: "promote", Type: kfp.String, Description: "evaluate's verdict: true promotes the challenger, false removes it"},
	{Name: "decision_reason", Type: kfp.String, Default: "", Description: "evaluate's verdict in a sentence, for the log"},
	{Name: "champion_model_uri", Type: kfp.String, Default: "", Description: "deploy-inferenceservice's champion_model_uri: the model the challenger was compared with; empty when the run's model became the service's own"},
	{Name: "challenger", Type: kfp.String, Default: "", Description: "deploy-inferenceservice's challenger: the name the model was deployed under beside the champion"},
	{Name: "challenger_url", Type: kfp.String, Default: "", Description: "deploy-inferenceservice's url: the challenger's endpoint, whose metrics the watch reads"},
	{Name: "watch_seconds", Type: kfp.Integer, Default: 0, Description: "before promoting, watch the challenger serve its share of the traffic this long: its error rate and p99 must stay within the bounds, or it is removed instead; 0: no watch"},
	{Name: "max_error_rate", Type: kfp.Double, Default: 0.01, Description: "the watch's bound on the share of the challenger's inference requests that fail"},
	{Name: "max_p99_ms", Type: kfp.Double, Default: 0.0, Description: "the watch's bound on the challenger's p99 latency in milliseconds; 0: none"},
	{Name: "drain_seconds", Type: kfp.Integer, Default: 30, Description: "after a promotion moved the service's address, the replaced champion answers at its old address this long (a client or ingress that read it just before moves meanwhile), then it goes"},
	{Name: "namespace", Type: kfp.String, Default: "", Description: "the InferenceService's namespace; default this step's namespace"},
	{Name: "run_id", Type: kfp.String, Default: "", Description: "the run ({{$.pipeline_job_uuid}}), recorded with a promotion"},
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding the models"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where this step sees the claim (the local backend keeps its serving records there)"},
}

func init() { Inputs = append(Inputs, register.Inputs...) }

// Component is the promote-model component run from image; component.yaml is generated from it.
func Component(image string) *kfp.Component {
	return &kfp.Component{
		Name:        "promote-model",
		Description: "Applies evaluate's champion/challenger verdict: promotes the challenger to the InferenceService's model without restarting its pods, or removes it and leaves the champion serving; records the model it replaced for a rollback.",
		Image:       image,
		Inputs:      Inputs,
		Outputs: []kfp.Output{
			{Name: OutputPromoted, Type: kfp.String, Description: "true: the run's model serves now"},
			{Name: OutputServingModelURI, Type: kfp.String, Description: "the model the service serves now"},
			{Name: OutputPreviousModelURI, Type: kfp.String, Description: "the model it served before (the rollback target); empty when none"},
		},
	}
}

// RequestFromExecutor reads the component's inputs; defaultNamespace is the step's own.
func RequestFromExecutor(e *kfp.Executor, defaultNamespace string) (*Request, error) {
	in := e.Params(Inputs)
	str := in.String
	s := &deploy.Service{
		Name: str("name", ""), Namespace: str("namespace", ""), ModelURI: str("model_uri", ""),
		MountPath: str("pvc_mount_path", "/mnt/pvc"), RunID: str("run_id", ""),
	}
	if s.Namespace == "" {
		s.Namespace = defaultNamespace
	}
	r := &Request{Service: s, ChampionModelURI: str("champion_model_uri", ""), Challenger: str("challenger", ""), Reason: str("decision_reason", "")}
	regURL, regToken := str("registry_url", ""), str("registry_token_path", "")
	r.ChallengerURL = str("challenger_url", "")
	watch := in.IntIn("watch_seconds", 0, 0, 24*3600)
	r.Watch = Watch{Window: time.Duration(watch) * time.Second, MaxErrorRate: in.Float("max_error_rate", 0.01)}
	r.Drain = time.Duration(in.IntIn("drain_seconds", 30, 0, 3600)) * time.Second
	maxP99 := in.Float("max_p99_ms", 0)
	verdict := str("promote", "")
	claimName := str("pvc_name", "gangboost-models")
	if err := in.Err(); err != nil {
		return nil, err
	}
	var errs []error
	if v, err := strconv.ParseBool(verdict); err != nil || (verdict != "true" && verdict != "false") {
		errs = append(errs, fmt.Errorf("promote %q: want true or false (evaluate's promote output)", verdict))
	} else {
		r.Promote = v
	}
	if s.Name == "" {
		errs = append(errs, errors.New("name is empty: the InferenceService to promote into"))
	}
	if e := r.Watch.MaxErrorRate; math.IsNaN(e) || e < 0 || e > 1 {
		errs = append(errs, fmt.Errorf("max_error_rate %v: want a share from 0 to 1", e))
	}
	if math.IsNaN(maxP99) || maxP99 < 0 || maxP99 > 3.6e6 {
		errs = append(errs, fmt.Errorf("max_p99_ms %v: want 0 (no bound) up to an hour", maxP99))
	} else {
		r.Watch.MaxP99 = time.Duration(maxP99 * float64(time.Millisecond))
	}
	if r.Watch.Window > 0 && r.ChallengerURL == "" {
		errs = append(errs, errors.New("watch_seconds is set but challenger_url is empty: pass deploy-inferenceservice's url"))
	}
	if s.InObjectStore() || s.FromRegistry() {
		if err := deploy.CheckModelURI(s.ModelURI); err != nil {
			errs = append(errs, err)
		}
	} else if c, p, err := deploy.ParseModelURI(s.ModelURI); err != nil {
		errs = append(errs, err)
	} else {
		s.Claim, s.ModelPath = c, p
		if c != claimName {
			errs = append(errs, fmt.Errorf("model_uri %q is on claim %q but pvc_name is %q", s.ModelURI, c, claimName))
		}
	}
	if r.ChampionModelURI != "" {
		if err := deploy.CheckModelURI(r.ChampionModelURI); err != nil {
			errs = append(errs, fmt.Errorf("champion_model_uri: %w", err))
		}
	}
	if s.Namespace == "" {
		errs = append(errs, errors.New("namespace: no input value and the step's own namespace is unknown"))
	}
	reg, err := register.FromInputs(regURL, regToken)
	if err != nil {
		errs = append(errs, err)
	}
	r.Registry = reg
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// WriteOutputs records what serves.
func WriteOutputs(e *kfp.Executor, r *Result) error {
	for _, p := range []struct{ name, value string }{
		{OutputPromoted, strconv.FormatBool(r.Promoted)}, {OutputServingModelURI, r.ServingModelURI}, {OutputPreviousModelURI, r.PreviousModelURI},
	} {
		if err := e.SetParameter(p.name, p.value); err != nil {
			return err
		}
	}
	return e.WriteOutput()
}
