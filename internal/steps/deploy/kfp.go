package deploy

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/runtime/cmdline"
)

// The deploy-inferenceservice component's outputs (components/deploy-inferenceservice/component.yaml).
const (
	OutputURL         = "url"          // the V2 base URL evaluate calls (in-cluster status.address.url)
	OutputExternalURL = "external_url" // status.url
	OutputGRPCAddress = "grpc_address" // host:port, "" when the runtime exposes no gRPC port
	OutputModelName   = "model_name"
	// With a champion serving (promotion challenge): its endpoint and model, and the
	// challenger's name beside it; all "" when the model became the service's own.
	OutputChampionURL      = "champion_url"
	OutputChampionModelURI = "champion_model_uri"
	OutputChallenger       = "challenger"
)

// OutputNames are every output parameter the component writes.
var OutputNames = []string{OutputURL, OutputExternalURL, OutputGRPCAddress, OutputModelName, OutputChampionURL, OutputChampionModelURI, OutputChallenger}

// DefaultFSGroup is the predictor pods' default fsGroup: the runtime image's user and group.
const DefaultFSGroup = 65532

// Inputs are the component's input parameters, in the order component.yaml documents them.
var Inputs = []kfp.Input{
	{Name: "name", Type: kfp.String, Description: "the InferenceService's name (a DNS-1035 label), also the model's name in the V2 protocol"},
	{Name: "model_uri", Type: kfp.String, Description: "the model folder, pvc://<claim>/<path> or s3://<bucket>/<prefix>/<model>/<version>/: launch-xgboostjob's model_uri"},
	{Name: "service_account", Type: kfp.String, Default: "", Description: "the predictor's service account; for an s3:// model_uri the one whose Secret (annotated serving.kserve.io/s3-endpoint) KServe gives the storage initializer; empty: the namespace's default"},
	{Name: "priority_class", Type: kfp.String, Default: "", Description: "the predictor pods' PriorityClass, e.g. gangboost-serving (operator-config/volcano: serving outranks gang-scheduled training); empty: the cluster's default"},
	{Name: "object_store_endpoint", Type: kfp.String, Default: "", Description: "endpoint of an s3:// model_uri for this step's check of the version (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; without them the storage initializer checks it in the pod)"},
	{Name: "object_store_region", Type: kfp.String, Default: "", Description: "object store region; default the bucket's"},
	{Name: "object_store_path_style", Type: kfp.String, Default: "false", Description: "true: address buckets as endpoint/bucket (MinIO, Ceph)"},
	{Name: "namespace", Type: kfp.String, Default: "", Description: "where the InferenceService goes; default this step's namespace"},
	{Name: "runtime", Type: kfp.String, Default: "gangboost-xgboost", Description: "the ServingRuntime or ClusterServingRuntime serving the model"},
	{Name: "runtime_args", Type: kfp.String, Default: "", Description: "more gangboost-runtime flags for this model, space-separated, after the runtime's own (so they win), e.g. --enable_batching=true --max_batch_size=128; checked as the runtime reads them before anything is applied; empty: the runtime's (batching auto: only a model whose one-row evaluation takes " + cmdline.AutoMinRowCost.String() + " or more)"},
	{Name: "protocol_version", Type: kfp.String, Default: "v2", Description: "v1, v2 or grpc-v2 (with runtime gangboost-xgboost-grpc)"},
	{Name: "cpu", Type: kfp.String, Default: "1", Description: "CPU of the predictor (requests = limits)"},
	{Name: "memory", Type: kfp.String, Default: "1Gi", Description: "memory of the predictor (requests = limits)"},
	{Name: "min_replicas", Type: kfp.Integer, Default: 1},
	{Name: "max_replicas", Type: kfp.Integer, Default: 1},
	{Name: "timeout_seconds", Type: kfp.Integer, Default: 300, Description: "how long the service may take to become ready before the step fails"},
	{Name: "run_id", Type: kfp.String, Default: "", Description: "the run deploying the model ({{$.pipeline_job_uuid}}), recorded on the InferenceService"},
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding the models"},
	{Name: "deployment_mode", Type: kfp.String, Default: "RawDeployment", Description: "KServe's deployment mode for this InferenceService (annotation serving.kserve.io/deploymentMode): RawDeployment (what the gRPC runtime and port-forward need) or Serverless; empty: the cluster's default"},
	{Name: "fs_group", Type: kfp.Integer, Default: DefaultFSGroup, Description: "fsGroup of the predictor pods (the runtime runs as 65532); -1 none"},
	{Name: "run_as_user", Type: kfp.Integer, Default: -1, Description: "uid the runtime runs as; -1 the image's (65532)"},
	{Name: "run_as_group", Type: kfp.Integer, Default: -1, Description: "gid the runtime runs as; -1 the image's (65532)"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where this step sees the claim (the local backend serves the model from there)"},
	{Name: "promotion", Type: kfp.String, Default: PromotionChallenge, Description: "challenge: with another model serving, deploy beside it as a challenger (KServe canary) for evaluate to compare and promote-model to promote or remove; replace: roll the service out to the new model at once"},
	{Name: "challenger_traffic_percent", Type: kfp.Integer, Default: 0, Description: "share of the service's requests the challenger gets (0: a dark launch; more needs an ingress that splits traffic)"},
}

// Component is the deploy-inferenceservice component run from image; component.yaml is
// generated from it.
func Component(image string) *kfp.Component {
	return &kfp.Component{
		Name:        "deploy-inferenceservice",
		Description: "Serves a model from the claim as a KServe InferenceService (V2 protocol, gangboost runtime): creates or rolls it out, waits until it is Ready and outputs its URL.",
		Image:       image,
		Inputs:      Inputs,
		Outputs: []kfp.Output{
			{Name: OutputURL, Type: kfp.String, Description: "V2 base URL inside the cluster (status.address.url)"},
			{Name: OutputExternalURL, Type: kfp.String, Description: "URL from outside the cluster (status.url)"},
			{Name: OutputGRPCAddress, Type: kfp.String, Description: "host:port of V2 gRPC, empty when the runtime exposes none"},
			{Name: OutputModelName, Type: kfp.String, Description: "the model's name in the V2 protocol"},
			{Name: OutputChampionURL, Type: kfp.String, Description: "V2 base URL of the model that serves (the champion) when the new one was deployed beside it; empty otherwise"},
			{Name: OutputChampionModelURI, Type: kfp.String, Description: "the champion's model_uri; empty when the new model became the service's own"},
			{Name: OutputChallenger, Type: kfp.String, Description: "the challenger's name beside the champion (KServe canary); empty otherwise"},
		},
	}
}

// ServiceFromExecutor reads the component's inputs into a Service; defaultNamespace is the step's
// own namespace.
func ServiceFromExecutor(e *kfp.Executor, defaultNamespace string) (*Service, error) {
	in := e.Params(Inputs)
	str, integer := in.NonEmpty, in.Int
	s := &Service{
		Name:            str("name", ""),
		Namespace:       str("namespace", defaultNamespace),
		ModelURI:        str("model_uri", ""),
		MountPath:       str("pvc_mount_path", "/mnt/pvc"),
		Runtime:         str("runtime", "gangboost-xgboost"),
		ProtocolVersion: str("protocol_version", "v2"),
		CPU:             str("cpu", "1"),
		Memory:          str("memory", "1Gi"),
		RunID:           str("run_id", ""),
		DeploymentMode:  in.String("deployment_mode", "RawDeployment"),
		Promotion:       str("promotion", PromotionChallenge),
	}
	for _, id := range []struct {
		input string
		def   int64
		dst   **int64
	}{{"fs_group", DefaultFSGroup, &s.FSGroup}, {"run_as_user", -1, &s.RunAsUser}, {"run_as_group", -1, &s.RunAsGroup}} {
		if v := in.IntIn(id.input, id.def, -1, math.MaxUint32); v >= 0 {
			*id.dst = &v
		}
	}
	minR, maxR := integer("min_replicas", 1), integer("max_replicas", 1)
	timeout := integer("timeout_seconds", 300)
	s.ChallengerTraffic = int32(in.IntIn("challenger_traffic_percent", 0, 0, 100))
	claimInput := str("pvc_name", "gangboost-models")
	if err := in.Err(); err != nil {
		return nil, err
	}
	if minR > 1<<20 || maxR > 1<<20 || minR < -1<<20 || maxR < -1<<20 {
		return nil, fmt.Errorf("min_replicas = %d, max_replicas = %d: out of range", minR, maxR)
	}
	s.MinReplicas, s.MaxReplicas = int32(minR), int32(maxR)
	if timeout > int64(24*time.Hour/time.Second) {
		return nil, fmt.Errorf("timeout_seconds = %d, want at most a day", timeout)
	}
	s.Timeout = time.Duration(timeout) * time.Second
	if err := claim.CheckName(claimInput); err != nil {
		return nil, err
	}
	args := in.String("runtime_args", "")
	if len(args) > cmdline.MaxDeploymentArgs*(cmdline.MaxDeploymentArgBytes+1) {
		return nil, fmt.Errorf("runtime_args: %d bytes, more than %d flags of %d bytes", len(args), cmdline.MaxDeploymentArgs, cmdline.MaxDeploymentArgBytes)
	}
	if f := strings.Fields(args); len(f) > 0 {
		s.RuntimeArgs = f
	}
	s.ServiceAccount = in.String("service_account", "")
	s.PriorityClass = in.String("priority_class", "")
	s.ObjectStore = objectstore.FromInputs(in.String)
	if c, p, err := ParseModelURI(s.ModelURI); err == nil {
		s.Claim, s.ModelPath = c, p
		if c != claimInput {
			return nil, fmt.Errorf("model_uri %q is on claim %q but pvc_name is %q: the step mounts pvc_name", s.ModelURI, c, claimInput)
		}
	}
	if s.Namespace == "" {
		return nil, errors.New("namespace: no input value and the step's own namespace is unknown")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// WriteOutputs records a deployed model's endpoint, and the champion beside it, as the step's
// output parameters.
func WriteOutputs(e *kfp.Executor, r *Result) error {
	ep := r.Endpoint
	championURL, challenger := "", ""
	if r.Champion != nil {
		championURL = r.Champion.URL
	}
	if r.Challenger != nil {
		challenger = r.Challenger.Name
	}
	for _, p := range []struct{ name, value string }{
		{OutputURL, ep.URL}, {OutputExternalURL, ep.ExternalURL}, {OutputGRPCAddress, ep.GRPCAddress}, {OutputModelName, ep.ModelName},
		{OutputChampionURL, championURL}, {OutputChampionModelURI, r.ChampionModelURI}, {OutputChallenger, challenger},
	} {
		if err := e.SetParameter(p.name, p.value); err != nil {
			return err
		}
	}
	return e.WriteOutput()
}
