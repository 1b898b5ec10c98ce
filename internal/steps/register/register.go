// Package register records a pipeline run's model in the Kubeflow Model Registry, through the
// registry's own Go client (pkg/openapi): the RegisteredModel (by model name), the ModelVersion
// (by version) with the trainer's and evaluate's metrics and the run as custom properties, its
// ModelArtifact (the model's URI, format xgboost, the XGBoost version that wrote it, the file's
// sha256), and, once a version serves, the InferenceService in the ServingEnvironment named after
// its namespace, pointed at that version, with a ServeModel record. So the registry answers
// "which version serves where, and what did it score".
package register

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubeflow/model-registry/pkg/openapi"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/kfp"
)

// ModelFormat is the ModelArtifact's modelFormatName, as KServe's modelFormat names it.
const ModelFormat = "xgboost"

// Custom properties gangboost writes on a ModelVersion (trainer metrics as trainer.<name>,
// evaluate's as evaluate.<name>).
const (
	PropRunID       = "gangboost.run_id"
	PropProducer    = "gangboost.producer"
	PropSHA256      = "gangboost.model_sha256"
	PropObjective   = "gangboost.objective"
	PropIncomplete  = "gangboost.registration_failed"
	TrainerPrefix   = "trainer."
	EvaluatePrefix  = "evaluate."
	requestDeadline = 30 * time.Second
)

// Client talks to one registry.
type Client struct {
	api  *openapi.APIClient
	base string
}

// New returns a client of the registry at baseURL (http(s)://host[:port][/path], e.g. Kubeflow's
// in-cluster http://model-registry-service.kubeflow.svc.cluster.local:8080); tokenPath, when set,
// names a file whose bearer token goes with every request (a registry behind Kubeflow's auth).
func New(baseURL, tokenPath string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("registry_url %q: want http(s)://host[:port], e.g. http://model-registry-service.kubeflow.svc.cluster.local:8080", baseURL)
	}
	cfg := openapi.NewConfiguration()
	cfg.Servers = openapi.ServerConfigurations{{URL: strings.TrimRight(baseURL, "/")}}
	cfg.HTTPClient = &http.Client{Timeout: requestDeadline}
	cfg.UserAgent = "gangboost"
	if tokenPath != "" {
		tok, err := os.ReadFile(tokenPath)
		if err != nil {
			return nil, fmt.Errorf("registry token: %w", err)
		}
		cfg.AddDefaultHeader("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	return &Client{api: openapi.NewAPIClient(cfg), base: strings.TrimRight(baseURL, "/")}, nil
}

// Model is one model version as a run knows it.
type Model struct {
	// Name is the RegisteredModel's name (the pipeline's model_name), Version the ModelVersion's.
	Name, Version string
	// URI is the model folder (pvc://, s3://): the ModelArtifact's uri.
	URI string
	// Trainer is the version's metadata.json (nil: unknown, nothing of it recorded).
	Trainer *modeldir.Metadata
	RunID   string
	// Evaluated are evaluate's metrics of the served model (accuracy, logloss, auc, rmse, p99_ms).
	Evaluated map[string]float64
}

// Record says where a version is in the registry.
type Record struct {
	RegisteredModelID, ModelVersionID, ModelArtifactID string
	// Created is false when the version was there (a retried step): its properties were updated.
	Created bool
}

// apiError says what a failed call means: the registry's own message where it sent one.
func (c *Client) apiError(what string, resp *http.Response, err error) error {
	var oe *openapi.GenericOpenAPIError
	if errors.As(err, &oe) {
		var body struct{ Message string }
		if json.Unmarshal(oe.Body(), &body) == nil && body.Message != "" {
			return fmt.Errorf("model registry %s: %s: %s (%s)", c.base, what, body.Message, resp.Status)
		}
	}
	if resp == nil {
		return fmt.Errorf("model registry %s: %s: %w (is registry_url the registry's REST endpoint, and does it answer from here?)", c.base, what, err)
	}
	return fmt.Errorf("model registry %s: %s: %s: %w", c.base, what, resp.Status, err)
}

func notFound(resp *http.Response) bool { return resp != nil && resp.StatusCode == http.StatusNotFound }

// RegisterVersion records m: its RegisteredModel (found or created), ModelVersion and
// ModelArtifact. A version that exists with the same artifact URI (a retried step) gets the new
// properties; one with another URI is refused, naming both. When the artifact cannot be recorded
// after the version was created, the version is archived and marked as a failed registration
// (the registry's API has no delete), so no reader takes it for a model.
func (c *Client) RegisterVersion(ctx context.Context, m Model) (*Record, error) {
	api := c.api.ModelRegistryServiceAPI
	rm, resp, err := api.FindRegisteredModel(ctx).Name(m.Name).Execute()
	if notFound(resp) {
		rm, resp, err = api.CreateRegisteredModel(ctx).RegisteredModelCreate(openapi.RegisteredModelCreate{
			Name: m.Name, Description: ptr("XGBoost model trained by gangboost"), LibraryName: ptr(ModelFormat),
		}).Execute()
	}
	if err != nil {
		return nil, c.apiError("registered model "+m.Name, resp, err)
	}
	rec := &Record{RegisteredModelID: rm.GetId()}
	props := m.properties()
	mv, resp, err := api.FindModelVersion(ctx).Name(m.Version).ParentResourceId(rec.RegisteredModelID).Execute()
	switch {
	case notFound(resp):
		mv, resp, err = api.CreateModelVersion(ctx).ModelVersionCreate(openapi.ModelVersionCreate{
			Name: m.Version, RegisteredModelId: rec.RegisteredModelID, CustomProperties: &props,
			Description: ptr("model " + m.URI), Author: ptr(producer(m)),
		}).Execute()
		if err != nil {
			return nil, c.apiError("create model version "+m.Name+"/"+m.Version, resp, err)
		}
		rec.Created = true
	case err != nil:
		return nil, c.apiError("model version "+m.Name+"/"+m.Version, resp, err)
	default:
		uri, id, err := c.artifact(ctx, mv.GetId())
		if err != nil {
			return nil, err
		} else if uri != "" && uri != m.URI {
			return nil, fmt.Errorf("model registry %s: version %s/%s is registered with the model at %s, not %s: a registered version is not replaced; train into another model_version",
				c.base, m.Name, m.Version, uri, m.URI)
		}
		merged := maps.Clone(mv.GetCustomProperties())
		if merged == nil {
			merged = map[string]openapi.MetadataValue{}
		}
		maps.Copy(merged, props)
		delete(merged, PropIncomplete)
		if _, resp, err := api.UpdateModelVersion(ctx, mv.GetId()).ModelVersionUpdate(openapi.ModelVersionUpdate{
			CustomProperties: &merged, State: openapi.MODELVERSIONSTATE_LIVE.Ptr(),
		}).Execute(); err != nil {
			return nil, c.apiError("update model version "+m.Name+"/"+m.Version, resp, err)
		}
		rec.ModelArtifactID = id
	}
	rec.ModelVersionID = mv.GetId()
	a := m.artifact()
	if rec.ModelArtifactID != "" {
		a.SetId(rec.ModelArtifactID) // the retried step's: updated in place
	}
	art, resp, err := api.UpsertModelVersionArtifact(ctx, rec.ModelVersionID).Artifact(openapi.ModelArtifactAsArtifact(a)).Execute()
	if err != nil {
		err = c.apiError("model artifact of "+m.Name+"/"+m.Version, resp, err)
		if rec.Created {
			c.archive(ctx, rec.ModelVersionID, err)
		}
		return nil, err
	}
	if art.ModelArtifact != nil {
		rec.ModelArtifactID = art.ModelArtifact.GetId()
	}
	return rec, nil
}

// Find returns where version name/version is registered, nil when it is not.
func (c *Client) Find(ctx context.Context, name, version string) (*Record, error) {
	api := c.api.ModelRegistryServiceAPI
	rm, resp, err := api.FindRegisteredModel(ctx).Name(name).Execute()
	if notFound(resp) {
		return nil, nil
	}
	if err != nil {
		return nil, c.apiError("registered model "+name, resp, err)
	}
	mv, resp, err := api.FindModelVersion(ctx).Name(version).ParentResourceId(rm.GetId()).Execute()
	if notFound(resp) {
		return nil, nil
	}
	if err != nil {
		return nil, c.apiError("model version "+name+"/"+version, resp, err)
	}
	_, id, err := c.artifact(ctx, mv.GetId())
	if err != nil {
		return nil, err
	}
	return &Record{RegisteredModelID: rm.GetId(), ModelVersionID: mv.GetId(), ModelArtifactID: id}, nil
}

// archive marks a version whose registration failed: archived, with the reason.
func (c *Client) archive(ctx context.Context, versionID string, cause error) {
	props := map[string]openapi.MetadataValue{PropIncomplete: str(cause.Error())}
	_, _, _ = c.api.ModelRegistryServiceAPI.UpdateModelVersion(ctx, versionID).ModelVersionUpdate(openapi.ModelVersionUpdate{
		State: openapi.MODELVERSIONSTATE_ARCHIVED.Ptr(), CustomProperties: &props,
	}).Execute()
}

// artifact is the URI and id of a version's model artifact, "" when it has none.
func (c *Client) artifact(ctx context.Context, versionID string) (uri, id string, err error) {
	list, resp, err := c.api.ModelRegistryServiceAPI.GetModelVersionArtifacts(ctx, versionID).Execute()
	if err != nil {
		return "", "", c.apiError("artifacts of model version "+versionID, resp, err)
	}
	for _, a := range list.GetItems() {
		if a.ModelArtifact != nil {
			return a.ModelArtifact.GetUri(), a.ModelArtifact.GetId(), nil
		}
	}
	return "", "", nil
}

func (m Model) artifact() *openapi.ModelArtifact {
	a := openapi.NewModelArtifactWithDefaults()
	a.SetName(m.Name + "-" + m.Version)
	a.SetUri(m.URI)
	a.SetModelFormatName(ModelFormat)
	a.SetState(openapi.ARTIFACTSTATE_LIVE)
	props := map[string]openapi.MetadataValue{}
	if t := m.Trainer; t != nil {
		a.SetModelFormatVersion(t.XGBoostVersion)
		props[PropSHA256] = str(t.ModelSHA256)
		props["gangboost.model_file"] = str(t.ModelFile)
	}
	a.SetCustomProperties(props)
	return a
}

// properties are the version's custom properties: the run, the trainer's final metrics and
// evaluate's.
func (m Model) properties() map[string]openapi.MetadataValue {
	p := map[string]openapi.MetadataValue{}
	if m.RunID != "" {
		p[PropRunID] = str(m.RunID)
	}
	if t := m.Trainer; t != nil {
		p[PropSHA256], p[PropObjective] = str(t.ModelSHA256), str(t.Objective)
		if t.Producer != "" {
			p[PropProducer] = str(t.Producer)
		}
		p[TrainerPrefix+"rounds"] = double(float64(t.Rounds))
		for _, name := range slices.Sorted(maps.Keys(t.Metrics)) {
			if v := t.Metrics[name]; len(v) > 0 {
				p[TrainerPrefix+name] = double(v[len(v)-1])
			}
		}
	}
	for name, v := range m.Evaluated {
		p[EvaluatePrefix+name] = double(v)
	}
	return p
}

func producer(m Model) string {
	if m.Trainer != nil && m.Trainer.Producer != "" {
		return m.Trainer.Producer
	}
	return "gangboost"
}

// Serving is an InferenceService that serves a registered version.
type Serving struct {
	// Name and Namespace of the InferenceService; Runtime its serving runtime.
	Name, Namespace, Runtime string
}

// RecordServing records that s serves version rec: the ServingEnvironment named after s's
// namespace (found or created), the InferenceService (created, or pointed at the version), and a
// ServeModel record of the version.
func (c *Client) RecordServing(ctx context.Context, rec *Record, s Serving) (inferenceServiceID string, err error) {
	api := c.api.ModelRegistryServiceAPI
	env, resp, err := api.FindServingEnvironment(ctx).Name(s.Namespace).Execute()
	if notFound(resp) {
		env, resp, err = api.CreateServingEnvironment(ctx).ServingEnvironmentCreate(openapi.ServingEnvironmentCreate{
			Name: s.Namespace, Description: ptr("Kubernetes namespace " + s.Namespace)}).Execute()
	}
	if err != nil {
		return "", c.apiError("serving environment "+s.Namespace, resp, err)
	}
	is, resp, err := api.FindInferenceService(ctx).Name(s.Name).ParentResourceId(env.GetId()).Execute()
	switch {
	case notFound(resp):
		is, resp, err = api.CreateInferenceService(ctx).InferenceServiceCreate(openapi.InferenceServiceCreate{
			Name: ptr(s.Name), RegisteredModelId: rec.RegisteredModelID, ServingEnvironmentId: env.GetId(),
			ModelVersionId: ptr(rec.ModelVersionID), Runtime: optional(s.Runtime), DesiredState: openapi.INFERENCESERVICESTATE_DEPLOYED.Ptr(),
		}).Execute()
	case err == nil:
		is, resp, err = api.UpdateInferenceService(ctx, is.GetId()).InferenceServiceUpdate(openapi.InferenceServiceUpdate{
			ModelVersionId: ptr(rec.ModelVersionID), DesiredState: openapi.INFERENCESERVICESTATE_DEPLOYED.Ptr(),
		}).Execute()
	}
	if err != nil {
		return "", c.apiError("inference service "+s.Namespace+"/"+s.Name, resp, err)
	}
	if _, resp, err := api.CreateInferenceServiceServe(ctx, is.GetId()).ServeModelCreate(openapi.ServeModelCreate{
		ModelVersionId: rec.ModelVersionID, LastKnownState: openapi.EXECUTIONSTATE_RUNNING.Ptr(),
		Name: ptr(s.Name + "-" + rec.ModelVersionID + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10)),
	}).Execute(); err != nil {
		return "", c.apiError("serve model record of "+s.Namespace+"/"+s.Name, resp, err)
	}
	return is.GetId(), nil
}

func ptr[T any](v T) *T { return &v }

// optional is nil for "" (a field left out), else &s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func str(s string) openapi.MetadataValue {
	v := openapi.NewMetadataStringValueWithDefaults()
	v.SetStringValue(s)
	return openapi.MetadataStringValueAsMetadataValue(v)
}

func double(f float64) openapi.MetadataValue {
	v := openapi.NewMetadataDoubleValueWithDefaults()
	v.SetDoubleValue(f)
	return openapi.MetadataDoubleValueAsMetadataValue(v)
}

// Inputs are the registry inputs of the steps that register (evaluate, promote-model).
var Inputs = []kfp.Input{
	{Name: "registry_url", Type: kfp.String, Default: "", Description: "the Kubeflow Model Registry's REST endpoint, e.g. http://model-registry-service.kubeflow.svc.cluster.local:8080; empty: nothing is registered"},
	{Name: "registry_token_path", Type: kfp.String, Default: "", Description: "a file holding a bearer token for the registry (e.g. the step's service account token where the registry is behind Kubeflow's auth); empty: none"},
}

// FromInputs is the client the inputs name, nil when registry_url is empty.
func FromInputs(url, tokenPath string) (*Client, error) {
	if url == "" {
		return nil, nil
	}
	return New(url, tokenPath)
}

// Skipped is what a step that registers says once when no registry is configured.
const Skipped = "model registry: registry_url is empty, nothing is registered"

// VersionOf is the model version a model URI names: its last path element
// (pvc://<claim>/models/iris/run-1a2b3c4d, s3://<bucket>/<prefix>/iris/run-1a2b3c4d/).
func VersionOf(uri string) string {
	return path.Base(strings.TrimRight(uri, "/"))
}
