// Package deploy serves a trained model from a pipeline step: it turns the step's inputs into a
// desired Service, applies it through a serving Backend (a KServe InferenceService, or a local
// gangboost-runtime process), waits until it is ready within a deadline while printing progress,
// says why it is not ready when the deadline passes, and writes the endpoint as the step's outputs.
//
// The deployer knows the Backend interface, not Kubernetes or processes: the InferenceService
// backend lives in package deploy/kube, the local process backend in package deploy/local.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/runtime/cmdline"
)

// Service is one model served under a name, independent of the backend that serves it.
type Service struct {
	// Name is the InferenceService's name (a DNS-1035 label) and the model's name in the V2
	// protocol (/v2/models/<name>).
	Name string
	// Namespace of the InferenceService; the local backend ignores it.
	Namespace string
	// ModelURI is where the model folder is: pvc://<Claim>/<ModelPath> (Claim and ModelPath then
	// say the same), or s3://<bucket>/<prefix>/<model>/<version>/ (KServe's storage initializer
	// downloads it; gangboost's checks it against its metadata.json).
	ModelURI         string
	Claim, ModelPath string
	// ObjectStore reaches an s3:// ModelURI from this step (credentials: AWS_* environment);
	// ServiceAccount is the predictor's service account, whose Secret KServe gives the storage
	// initializer ("" the namespace's default).
	ObjectStore    objectstore.Config
	ServiceAccount string
	// PriorityClass is the predictor pods' PriorityClass ("" the cluster's default).
	PriorityClass string
	// MountPath is where this step sees the claim (pvc_mount_path): the local backend serves
	// MountPath/ModelPath.
	MountPath string
	// Runtime is the ServingRuntime or ClusterServingRuntime; ProtocolVersion v1, v2 or grpc-v2.
	Runtime, ProtocolVersion string
	// RuntimeArgs are more gangboost-runtime flags for this model's server
	// (spec.predictor.model.args, which KServe appends to the ServingRuntime's, so they win):
	// e.g. --enable_batching=true for a model the runtime's auto choice leaves unbatched.
	// Validate checks them as the runtime parses them (cmdline.CheckDeploymentArgs).
	RuntimeArgs []string
	// CPU and Memory are the predictor's requests and limits.
	CPU, Memory              string
	MinReplicas, MaxReplicas int32
	// Timeout is how long the service may take to become ready.
	Timeout time.Duration
	// RunID is the pipeline run deploying it (may be empty); recorded on the service.
	RunID string
	// ModelSHA256 is the model file's sha256 from the folder's metadata.json ("" when this step
	// cannot see the folder). It reaches the predictor's pod template, so a version replaced on
	// purpose (launch's overwrite) under the same model_uri rolls the pods onto the new bytes.
	ModelSHA256 string
	// DeploymentMode is KServe's for this service (RawDeployment, Serverless, or "" for the
	// cluster's default). The gangboost runtimes' gRPC port and port-forwarding to the
	// predictor need RawDeployment; Kubeflow's KServe install defaults to Serverless.
	DeploymentMode string
	// Promotion is how the model reaches a service that serves another one: PromotionChallenge
	// (beside it, as a challenger with ChallengerTraffic percent of the requests) or
	// PromotionReplace.
	Promotion         string
	ChallengerTraffic int32
	// FSGroup, RunAsUser and RunAsGroup are the predictor pods' security context (nil: unset).
	// The runtime runs as uid 65532 and reads the model from the claim.
	FSGroup, RunAsUser, RunAsGroup *int64
}

// DeploymentModes are the values of deployment_mode KServe accepts (v0.19 calls RawDeployment
// Standard and Serverless Knative; earlier releases know only the first names).
var DeploymentModes = []string{"RawDeployment", "Serverless", "Standard", "Knative"}

// LocalModelDir is the model folder as this step sees it: ModelPath under MountPath, never
// outside it.
func (s *Service) LocalModelDir() (string, error) {
	if s.InObjectStore() || s.FromRegistry() {
		return "", fmt.Errorf("model_uri %s is not on the claim", s.ModelURI)
	}
	return claim.Join(s.MountPath, s.ModelPath)
}

// FromRegistry reports whether the model is named in the Kubeflow Model Registry
// (model-registry://): KServe's storage initializer for that scheme resolves it in the pod.
func (s *Service) FromRegistry() bool { return strings.HasPrefix(s.ModelURI, RegistryScheme) }

// InObjectStore reports whether the model is in an object store (an s3:// ModelURI).
func (s *Service) InObjectStore() bool { return strings.HasPrefix(s.ModelURI, modelobjects.Scheme) }

// ModelObjects is the object store folder of an s3:// ModelURI.
func (s *Service) ModelObjects() (*modelobjects.Folder, error) {
	return modelobjects.Open(s.ModelURI, s.ObjectStore, "deploy "+s.Name)
}

// ReadModelSHA256 sets ModelSHA256 from the model folder's metadata.json where this step sees
// the claim; a folder it cannot see leaves it empty (the pods then follow the model_uri alone).
// An s3:// version is read from the store when this step has credentials: one without its
// metadata.json (an upload that stopped) is refused here, before anything is applied. Without
// credentials the storage initializer checks it in the pod.
func (s *Service) ReadModelSHA256(ctx context.Context) error {
	if s.FromRegistry() {
		return nil // the registry's storage initializer resolves it in the pod
	}
	if s.InObjectStore() {
		if !s.ObjectStore.CanSign() {
			return nil
		}
		f, err := s.ModelObjects()
		if err != nil {
			return err
		}
		md, err := f.ReadMetadata(ctx)
		if err != nil {
			return fmt.Errorf("model_uri %s: %w", s.ModelURI, err)
		}
		s.ModelSHA256 = md.ModelSHA256
		return nil
	}
	dir, err := s.LocalModelDir()
	if err != nil {
		return err
	}
	md, err := modeldir.ReadMetadata(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("model_uri %s: %w", s.ModelURI, err)
	}
	s.ModelSHA256 = md.ModelSHA256
	return nil
}

// Endpoint is where a ready service answers: the step's outputs.
type Endpoint struct {
	// URL is the V2 base URL clients of the same cluster (or machine) call.
	URL string
	// ExternalURL is the URL from outside the cluster (KServe's status.url).
	ExternalURL string
	// GRPCAddress is host:port of the V2 gRPC service, "" when the runtime does not expose it.
	GRPCAddress string
	// ModelName is the model's name in the V2 protocol.
	ModelName string
}

// Backend serves Services.
type Backend interface {
	// Apply creates the service, or updates an existing one of the same name to the new
	// desired state (a rollout: the old version serves until the new one is ready).
	Apply(ctx context.Context, s *Service) error
	// Wait returns the endpoint once the service serves the applied version, calling progress
	// with a line whenever something changes. It gives up when ctx ends.
	Wait(ctx context.Context, s *Service, progress func(line string)) (*Endpoint, error)
	// Describe says why the service is not ready: conditions, model status, pods, events or
	// the runtime's log, one fact per line.
	Describe(ctx context.Context, s *Service) string
}

// NotReadyError is a service that did not become ready: why the wait ended and what the backend
// reports about it.
type NotReadyError struct {
	Service string
	Cause   error
	// Description is the backend's Describe.
	Description string
}

func (e *NotReadyError) Error() string {
	msg := fmt.Sprintf("%s is not ready: %v", e.Service, e.Cause)
	if d := strings.TrimSpace(e.Description); d != "" {
		msg += "\n  " + strings.ReplaceAll(d, "\n", "\n  ")
	}
	return msg
}

func (e *NotReadyError) Unwrap() error { return e.Cause }

// Deployer applies a service through a Backend and waits for it.
type Deployer struct {
	Backend Backend
	// Log receives progress lines.
	Log io.Writer
}

// Run applies the service and waits until it is ready, at most s.Timeout from now. When it is
// not ready by then (or the backend reports a failure), the error holds the backend's Describe.
func (d *Deployer) Run(ctx context.Context, s *Service) (*Endpoint, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := d.Backend.Apply(ctx, s); err != nil {
		return nil, err
	}
	d.printf("applied %s: model %s, runtime %s, protocol %s, replicas %d-%d; waiting up to %s for it to be ready",
		s.Name, s.ModelURI, s.Runtime, s.ProtocolVersion, s.MinReplicas, s.MaxReplicas, s.Timeout)
	start := time.Now()
	var ep *Endpoint
	err := d.wait(ctx, s, s.Name, func(ctx context.Context, progress func(string)) (err error) {
		ep, err = d.Backend.Wait(ctx, s, progress)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.printf("%s ready after %s: %s", s.Name, time.Since(start).Round(time.Millisecond), ep.URL)
	return ep, nil
}

// wait runs wait at most s.Timeout, with progress lines to the log. When it fails, the error
// (the deadline's, when that ended it) becomes a *NotReadyError about what with the backend's
// Describe.
func (d *Deployer) wait(ctx context.Context, s *Service, what string, wait func(ctx context.Context, progress func(string)) error) error {
	waitCtx, cancel := context.WithTimeoutCause(ctx, s.Timeout,
		fmt.Errorf("deadline of %s (timeout_seconds) passed", s.Timeout))
	defer cancel()
	err := wait(waitCtx, func(line string) { d.printf("%s", line) })
	if err == nil {
		return nil
	}
	if cause := context.Cause(waitCtx); cause != nil && waitCtx.Err() != nil {
		err = cause
	}
	// The caller's context may have ended too; describing must still happen.
	descCtx, descCancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer descCancel()
	return &NotReadyError{Service: what, Cause: err, Description: d.Backend.Describe(descCtx, s)}
}

// Result is where a deployed model answers, and the champion it challenges.
type Result struct {
	Endpoint
	// Challenger is set when the model was deployed beside the champion; Champion is then the
	// champion's endpoint and ChampionModelURI its model.
	Challenger       *Challenger
	Champion         *Endpoint
	ChampionModelURI string
}

// Deploy serves the model as its Promotion says: with PromotionChallenge and another model
// serving under the name (a Promoter backend), beside it as a challenger that evaluate compares
// and promote-model promotes or removes; otherwise as the service's model (Run).
func (d *Deployer) Deploy(ctx context.Context, s *Service) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p, ok := d.Backend.(Promoter)
	if s.Promotion != PromotionChallenge || !ok {
		ep, err := d.Run(ctx, s)
		if err != nil {
			return nil, err
		}
		return &Result{Endpoint: *ep}, nil
	}
	serving, err := p.Serving(ctx, s)
	if err != nil {
		return nil, err
	}
	if serving.ModelURI == "" || serving.ModelURI == s.ModelURI {
		if serving.ModelURI == "" {
			d.printf("%s serves no model yet: %s becomes its model, with no champion to compare with", s.Name, s.ModelURI)
		}
		ep, err := d.Run(ctx, s)
		if err != nil {
			return nil, err
		}
		return &Result{Endpoint: *ep}, nil
	}
	c := Challenger{Name: ChallengerName(s.Name, s.ModelURI, serving.StableName), TrafficPercent: s.ChallengerTraffic, Champion: serving.ModelURI}
	if c.TrafficPercent > 0 {
		// Never claim a split that does not happen: without one, the comparison is dark.
		why := "the serving backend cannot split traffic"
		splits := false
		if ts, ok := d.Backend.(TrafficSplitter); ok {
			splits, why = ts.SplitsTraffic(ctx, s)
		}
		if !splits {
			d.printf("challenger_traffic_percent %d asked, but %s: the challenger gets no traffic, evaluate's calls only (a dark comparison)", c.TrafficPercent, why)
			c.TrafficPercent = 0
		}
	}
	if err := p.ApplyChallenger(ctx, s, c); err != nil {
		return nil, err
	}
	d.printf("%s serves %s (the champion): deployed %s beside it as challenger %s with %d%% of the traffic; waiting up to %s for both to answer",
		s.Name, serving.ModelURI, s.ModelURI, c.Name, c.TrafficPercent, s.Timeout)
	start := time.Now()
	var ep, champion *Endpoint
	if err := d.wait(ctx, s, s.Name+" challenger "+c.Name, func(ctx context.Context, progress func(string)) (err error) {
		ep, champion, err = p.WaitChallenger(ctx, s, c, progress)
		return err
	}); err != nil {
		return nil, err
	}
	d.printf("challenger %s ready after %s at %s; the champion answers at %s", c.Name, time.Since(start).Round(time.Millisecond), ep.URL, champion.URL)
	return &Result{Endpoint: *ep, Challenger: &c, Champion: champion, ChampionModelURI: serving.ModelURI}, nil
}

func (d *Deployer) printf(format string, args ...any) {
	if d.Log == nil {
		return
	}
	fmt.Fprintf(d.Log, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
}

// dns1035 is Kubernetes' DNS-1035 label, which InferenceService names must be (KServe's webhook
// requires a leading letter; the predictor's Service name is derived from it).
var dns1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// maxNameLength keeps "<name>-predictor" within a Service name's 63 characters.
const maxNameLength = 63 - len("-predictor")

// ParseModelURI splits pvc://<claim>/<path> into the claim and the path on it, with the claim
// package's rules: KServe mounts the path as the volume's subPath.
func ParseModelURI(uri string) (claimName, modelPath string, err error) {
	u, err := claim.ParseURI(uri)
	if err != nil {
		return "", "", fmt.Errorf("model_uri %w (launch-xgboostjob's model_uri output; or s3://<bucket>/<prefix>/<model>/<version>/)", err)
	}
	return u.Claim, u.Path, nil
}

// RegistryScheme is the scheme of a model version named in the Kubeflow Model Registry
// (model-registry://<model>/<version>), which the registry's storage initializer resolves.
const RegistryScheme = "model-registry://"

// CheckModelURI checks a model_uri of any kind deploy serves: pvc://<claim>/<path>,
// s3://<bucket>/<prefix>/ of a model version, or model-registry://<model>/<version>.
func CheckModelURI(uri string) error {
	if rest, ok := strings.CutPrefix(uri, RegistryScheme); ok {
		model, version, _ := strings.Cut(rest, "/")
		if err := errors.Join(claim.CheckSegment("registered model", model), claim.CheckSegment("model version", version)); err != nil {
			return fmt.Errorf("model_uri %q: want model-registry://<model>/<version>: %w", uri, err)
		}
		return nil
	}
	if !strings.HasPrefix(uri, modelobjects.Scheme) {
		_, _, err := ParseModelURI(uri)
		return err
	}
	loc, err := modelobjects.ParseBase(uri)
	if err != nil {
		return fmt.Errorf("model_uri %w", err)
	}
	if loc.Key == "" {
		return fmt.Errorf("model_uri %q names a whole bucket: want s3://<bucket>/<prefix>/<model>/<version>/ (launch-xgboostjob's model_uri)", uri)
	}
	return nil
}

// Validate checks what every backend needs.
func (s *Service) Validate() error {
	var errs []error
	switch {
	case s.Name == "":
		errs = append(errs, errors.New("name is empty: it names the InferenceService and the model"))
	case len(s.Name) > maxNameLength || !dns1035.MatchString(s.Name):
		errs = append(errs, fmt.Errorf("name %q: want a DNS-1035 label of at most %d characters (lower case letters, digits and '-', starting with a letter, ending with a letter or digit)", s.Name, maxNameLength))
	}
	if s.InObjectStore() || s.FromRegistry() {
		if err := CheckModelURI(s.ModelURI); err != nil {
			errs = append(errs, err)
		}
	} else if claim, p, err := ParseModelURI(s.ModelURI); err != nil {
		errs = append(errs, err)
	} else if claim != s.Claim || p != s.ModelPath {
		errs = append(errs, fmt.Errorf("model_uri %q does not match claim %q and path %q", s.ModelURI, s.Claim, s.ModelPath))
	}
	for _, q := range []struct{ name, value string }{{"cpu", s.CPU}, {"memory", s.Memory}} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s = %q: not a Kubernetes quantity (e.g. 500m, 1, 1Gi): %v", q.name, q.value, err))
		} else if v.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s = %q: want more than 0", q.name, q.value))
		}
	}
	if s.MinReplicas < 1 {
		errs = append(errs, fmt.Errorf("min_replicas = %d, want at least 1 (the step waits for a serving replica)", s.MinReplicas))
	}
	if s.MaxReplicas < s.MinReplicas {
		errs = append(errs, fmt.Errorf("max_replicas = %d, want at least min_replicas (%d)", s.MaxReplicas, s.MinReplicas))
	}
	switch s.ProtocolVersion {
	case "v1", "v2", "grpc-v2":
	default:
		errs = append(errs, fmt.Errorf("protocol_version = %q, want v1, v2 or grpc-v2", s.ProtocolVersion))
	}
	if err := cmdline.CheckDeploymentArgs(s.RuntimeArgs); err != nil {
		errs = append(errs, fmt.Errorf("runtime_args: %w", err))
	}
	if s.Runtime == "" {
		errs = append(errs, errors.New("runtime is empty: name the ClusterServingRuntime (gangboost-xgboost, or gangboost-xgboost-grpc for grpc-v2); the gangboost runtimes are not auto-selected, so KServe would serve the model with another runtime or none"))
	}
	if s.DeploymentMode != "" && !slices.Contains(DeploymentModes, s.DeploymentMode) {
		errs = append(errs, fmt.Errorf("deployment_mode = %q, want %s, or empty for the cluster's default", s.DeploymentMode, strings.Join(DeploymentModes, ", ")))
	}
	for _, id := range []struct {
		input string
		v     *int64
	}{{"fs_group", s.FSGroup}, {"run_as_user", s.RunAsUser}, {"run_as_group", s.RunAsGroup}} {
		if id.v != nil && (*id.v < 0 || *id.v > math.MaxUint32) {
			errs = append(errs, fmt.Errorf("%s = %d, want an id from 0 to %d (or -1 to leave it unset)", id.input, *id.v, uint32(math.MaxUint32)))
		}
	}
	switch s.Promotion {
	case "", PromotionReplace:
	case PromotionChallenge:
		if len(s.Name) > MaxChallengedName {
			errs = append(errs, fmt.Errorf("name %q: a challenger is deployed beside it as %s-<challenger>-predictor, which leaves at most %d characters for the name; shorten it, or use promotion %s", s.Name, s.Name, MaxChallengedName, PromotionReplace))
		}
	default:
		errs = append(errs, fmt.Errorf("promotion = %q, want %s", s.Promotion, strings.Join(Promotions, " or ")))
	}
	if s.ChallengerTraffic < 0 || s.ChallengerTraffic > 100 {
		errs = append(errs, fmt.Errorf("challenger_traffic_percent = %d, want 0 (a dark launch) to 100", s.ChallengerTraffic))
	}
	if s.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout_seconds = %d, want more than 0", int64(s.Timeout/time.Second)))
	}
	return errors.Join(errs...)
}
