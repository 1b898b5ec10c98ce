// Package kfpapi is a client of Kubeflow Pipelines' v2beta1 REST API for what the gangboost CLI
// does: upload a pipeline package (or a new version of it) once it is checked as the server will
// read it, find a pipeline and its latest version, and create a run. Field names are the API server's (protojson with proto names).
package kfpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client talks to one KFP API server.
type Client struct {
	// Host is the API server's base URL (http://ml-pipeline.kubeflow:8888, or the UI's URL with
	// its path prefix, such as https://kubeflow.example.com/pipeline).
	Host string
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	HTTP  *http.Client
}

// Pipeline is a v2beta1 Pipeline.
type Pipeline struct {
	PipelineID  string `json:"pipeline_id"`
	Name        string `json:"name,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Description string `json:"description,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
}

// PipelineVersion is a v2beta1 PipelineVersion. PipelineSpec is the package as the server
// returns it: the PipelineSpec, or {pipeline_spec, platform_spec} when it has a platform document.
type PipelineVersion struct {
	PipelineID        string          `json:"pipeline_id"`
	PipelineVersionID string          `json:"pipeline_version_id"`
	Name              string          `json:"name,omitempty"`
	DisplayName       string          `json:"display_name,omitempty"`
	Description       string          `json:"description,omitempty"`
	CreatedAt         string          `json:"created_at,omitempty"`
	PipelineSpec      json.RawMessage `json:"pipeline_spec,omitempty"`
}

// Run is the part of a v2beta1 Run the CLI sends and reads.
type Run struct {
	RunID                    string                    `json:"run_id,omitempty"`
	DisplayName              string                    `json:"display_name"`
	Description              string                    `json:"description,omitempty"`
	ExperimentID             string                    `json:"experiment_id,omitempty"`
	PipelineVersionReference *PipelineVersionReference `json:"pipeline_version_reference"`
	RuntimeConfig            *RuntimeConfig            `json:"runtime_config"`
	ServiceAccount           string                    `json:"service_account,omitempty"`
	State                    string                    `json:"state,omitempty"`
}

// PipelineVersionReference names the pipeline version a run runs.
type PipelineVersionReference struct {
	PipelineID        string `json:"pipeline_id"`
	PipelineVersionID string `json:"pipeline_version_id"`
}

// RuntimeConfig holds a run's parameter values, typed (a NUMBER_INTEGER parameter is a JSON
// number, a STRING one a JSON string).
type RuntimeConfig struct {
	Parameters   map[string]any `json:"parameters"`
	PipelineRoot string         `json:"pipeline_root,omitempty"`
}

// Error is an answer of the API server that is not a success. gRPC-gateway errors carry
// {error, code, message, details}; the upload endpoints {error_message, error_details}.
type Error struct {
	Method, Path string
	Status       int
	// Code is the gRPC code of a gateway error (3 invalid argument, 5 not found, 6 already
	// exists, 7 permission denied, 16 unauthenticated).
	Code    int
	Message string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	return fmt.Sprintf("KFP API %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), msg)
}

// IsConflict reports whether err is the server saying the pipeline or version already exists.
func IsConflict(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Status == http.StatusConflict || e.Code == 6)
}

// UploadOptions are the query parameters of an upload.
type UploadOptions struct {
	Name, DisplayName, Description, Namespace string
}

// UploadPipeline creates a pipeline and its first version from a package: POST
// /apis/v2beta1/pipelines/upload, the file in multipart field "uploadfile". fileName is sent as
// the part's file name; the server wants it to end in .yaml (or .yml, .json, .zip, .tar.gz).
func (c *Client) UploadPipeline(ctx context.Context, fileName string, pkg []byte, o UploadOptions) (*Pipeline, error) {
	q := url.Values{}
	setIf(q, "name", o.Name)
	setIf(q, "display_name", o.DisplayName)
	setIf(q, "description", o.Description)
	setIf(q, "namespace", o.Namespace)
	var p Pipeline
	if err := c.upload(ctx, "/apis/v2beta1/pipelines/upload", q, fileName, pkg, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// UploadPipelineVersion adds a version to an existing pipeline: POST
// /apis/v2beta1/pipelines/upload_version?pipelineid=ID&name=...
func (c *Client) UploadPipelineVersion(ctx context.Context, pipelineID, fileName string, pkg []byte, o UploadOptions) (*PipelineVersion, error) {
	q := url.Values{"pipelineid": {pipelineID}}
	setIf(q, "name", o.Name)
	setIf(q, "display_name", o.DisplayName)
	setIf(q, "description", o.Description)
	var v PipelineVersion
	if err := c.upload(ctx, "/apis/v2beta1/pipelines/upload_version", q, fileName, pkg, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// FindPipeline is the pipeline named name (in namespace, when set), or nil when there is none:
// GET /apis/v2beta1/pipelines with a name EQUALS filter.
func (c *Client) FindPipeline(ctx context.Context, name, namespace string) (*Pipeline, error) {
	q := url.Values{"filter": {equalsFilter("name", name)}, "page_size": {"2"}}
	setIf(q, "namespace", namespace)
	var list struct {
		Pipelines []Pipeline `json:"pipelines"`
		TotalSize int        `json:"total_size"`
	}
	if err := c.do(ctx, http.MethodGet, "/apis/v2beta1/pipelines", q, nil, "", &list); err != nil {
		return nil, err
	}
	switch len(list.Pipelines) {
	case 0:
		return nil, nil
	case 1:
		return &list.Pipelines[0], nil
	}
	return nil, fmt.Errorf("KFP has %d pipelines named %q; pass --pipeline-id", len(list.Pipelines), name)
}

// FindVersion is the version of pipelineID named name, or nil when there is none.
func (c *Client) FindVersion(ctx context.Context, pipelineID, name string) (*PipelineVersion, error) {
	q := url.Values{"filter": {equalsFilter("name", name)}, "page_size": {"1"}}
	vs, err := c.listVersions(ctx, pipelineID, q)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	return &vs[0], nil
}

// LatestVersion is pipelineID's newest version.
func (c *Client) LatestVersion(ctx context.Context, pipelineID string) (*PipelineVersion, error) {
	vs, err := c.listVersions(ctx, pipelineID, url.Values{"sort_by": {"created_at desc"}, "page_size": {"1"}})
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("pipeline %s has no versions", pipelineID)
	}
	return &vs[0], nil
}

// GetVersion is one version of a pipeline.
func (c *Client) GetVersion(ctx context.Context, pipelineID, versionID string) (*PipelineVersion, error) {
	var v PipelineVersion
	p := "/apis/v2beta1/pipelines/" + url.PathEscape(pipelineID) + "/versions/" + url.PathEscape(versionID)
	if err := c.do(ctx, http.MethodGet, p, nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (c *Client) listVersions(ctx context.Context, pipelineID string, q url.Values) ([]PipelineVersion, error) {
	var list struct {
		PipelineVersions []PipelineVersion `json:"pipeline_versions"`
	}
	if err := c.do(ctx, http.MethodGet, "/apis/v2beta1/pipelines/"+url.PathEscape(pipelineID)+"/versions", q, nil, "", &list); err != nil {
		return nil, err
	}
	return list.PipelineVersions, nil
}

// CreateRun starts a run: POST /apis/v2beta1/runs with the Run as the body.
func (c *Client) CreateRun(ctx context.Context, r *Run) (*Run, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var out Run
	if err := c.do(ctx, http.MethodPost, "/apis/v2beta1/runs", nil, bytes.NewReader(body), "application/json", &out); err != nil {
		return nil, err
	}
	if out.RunID == "" {
		return nil, errors.New("KFP API POST /apis/v2beta1/runs: the answer has no run_id")
	}
	return &out, nil
}

// RunURL is the run's page in the KFP UI.
func (c *Client) RunURL(runID string) string {
	return strings.TrimRight(c.Host, "/") + "/#/runs/details/" + runID
}

func (c *Client) upload(ctx context.Context, path string, q url.Values, fileName string, pkg []byte, out any) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("uploadfile", fileName)
	if err != nil {
		return err
	}
	if _, err := part.Write(pkg); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, path, q, &body, mw.FormDataContentType(), out)
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string, out any) error {
	u := strings.TrimRight(c.Host, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("KFP API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("KFP API %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return apiError(method, path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("KFP API %s %s: the answer is not JSON (%w): %.200s", method, path, err, b)
	}
	return nil
}

func apiError(method, path string, status int, body []byte) error {
	e := &Error{Method: method, Path: path, Status: status}
	var fields struct {
		Error        string `json:"error"`
		Code         int    `json:"code"`
		Message      string `json:"message"`
		ErrorMessage string `json:"error_message"`
		ErrorDetails string `json:"error_details"`
	}
	if json.Unmarshal(body, &fields) == nil {
		e.Code = fields.Code
		for _, m := range []string{fields.Message, fields.Error, fields.ErrorMessage} {
			if m != "" {
				e.Message = m
				break
			}
		}
	}
	// The upload endpoints' details are the error with its stack (%+v): its first line names
	// what was wrong.
	if d, _, _ := strings.Cut(strings.TrimSpace(fields.ErrorDetails), "\n"); d != "" && !strings.Contains(e.Message, d) {
		if strings.HasPrefix(d, e.Message) {
			e.Message = d
		} else {
			e.Message += ": " + d
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 300 {
			e.Message = e.Message[:300] + "..."
		}
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Message += " (pass --token, or set KFP_TOKEN, with a token for audience pipelines.kubeflow.org)"
	}
	if e.Code != 0 && !strings.Contains(e.Message, "code") {
		e.Message += " (code " + strconv.Itoa(e.Code) + ")"
	}
	return e
}

// equalsFilter is a v2beta1 Filter (filter.proto) selecting key == value, as JSON.
func equalsFilter(key, value string) string {
	b, _ := json.Marshal(map[string]any{"predicates": []map[string]any{{"key": key, "operation": "EQUALS", "string_value": value}}})
	return string(b)
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
