// Package kfpfake is an in-memory stand-in for Kubeflow Pipelines' v2beta1 REST API server for
// tests: it checks requests as KFP's API server does (methods, paths, the multipart field, query
// parameters, bearer token, strict JSON bodies, the package parsed strictly) and answers with the
// server's shapes, including its two error bodies.
package kfpfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
)

// Pipeline and Version are what the server holds.
type Pipeline struct {
	ID, Name, DisplayName, Description, Namespace string
	Versions                                      []*Version
}

// Version is one uploaded package. HasPlatform is whether the server kept its platform document.
type Version struct {
	HasPlatform                        bool
	ID, Name, DisplayName, Description string
	Package                            []byte
	FileName                           string
	spec, platform                     json.RawMessage
}

// Experiment is an experiment the server holds.
type Experiment struct{ ID, Name, Description, Namespace string }

// Experiments are the experiments held, in creation order.
func (s *Server) Experiments() []*Experiment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Experiment(nil), s.experiments...)
}

// Request is one request the server received, for tests to inspect.
type Request struct {
	Method, Path string
	Query        url.Values
	Auth         string
}

// Server is the fake API server.
type Server struct {
	*httptest.Server
	// Token, when set, is the bearer token every request must carry.
	Token string
	// ListsWithoutSpec makes version listings leave pipeline_spec out (GET of one version
	// still has it).
	ListsWithoutSpec bool
	// MultiUser makes the server answer as multi-user KFP (Kubeflow's profiles) does: experiments
	// need a namespace, runs an experiment (whose namespace becomes the run's), and a caller may
	// use only the namespaces Access grants its bearer token (KFP's SubjectAccessReview), shared
	// pipelines (no namespace) excepted.
	MultiUser bool
	Access    map[string][]string

	mu          sync.Mutex
	pipelines   []*Pipeline
	experiments []*Experiment
	runs        []map[string]any
	requests    []Request
	next        int
}

// New starts a server; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Pipelines are the pipelines held, in upload order.
func (s *Server) Pipelines() []*Pipeline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Pipeline(nil), s.pipelines...)
}

// Runs are the created runs' bodies as sent, with run_id added.
func (s *Server) Runs() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.runs...)
}

// Requests are the requests received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) id(kind string) string {
	s.next++
	return fmt.Sprintf("%s-%04d-0000-0000-000000000000", kind, s.next)
}

// gatewayError writes gRPC-gateway's error body.
func gatewayError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": msg, "code": code, "message": msg, "details": []any{}})
}

// uploadError writes the upload endpoints' error body.
func uploadError(w http.ResponseWriter, status int, msg, details string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error_message": msg, "error_details": details})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Auth: r.Header.Get("Authorization")})
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		gatewayError(w, http.StatusUnauthorized, 16, "Request header error: there is no user identity header.")
		return
	}
	p := r.URL.Path
	switch {
	case p == "/apis/v2beta1/pipelines/upload":
		s.upload(w, r, false)
	case p == "/apis/v2beta1/pipelines/upload_version":
		s.upload(w, r, true)
	case p == "/apis/v2beta1/pipelines":
		s.listPipelines(w, r)
	case strings.HasPrefix(p, "/apis/v2beta1/pipelines/") && strings.Count(p, "/") == 5 && path.Base(p) == "versions":
		s.listVersions(w, r, strings.Split(p, "/")[4])
	case strings.HasPrefix(p, "/apis/v2beta1/pipelines/") && strings.Count(p, "/") == 6 && strings.Split(p, "/")[5] == "versions":
		s.getVersion(w, r, strings.Split(p, "/")[4], strings.Split(p, "/")[6])
	case p == "/apis/v2beta1/runs":
		s.createRun(w, r)
	case p == "/apis/v2beta1/experiments":
		s.experimentsEndpoint(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, version bool) {
	if r.Method != http.MethodPost {
		gatewayError(w, http.StatusMethodNotAllowed, 12, "Method Not Allowed")
		return
	}
	file, header, err := r.FormFile("uploadfile")
	if err != nil {
		uploadError(w, http.StatusBadRequest, "Failed to read pipeline from file", err.Error())
		return
	}
	defer file.Close()
	pkg, _ := io.ReadAll(file)
	ext := path.Ext(header.Filename)
	if ext != ".yaml" && ext != ".yml" && ext != ".json" {
		uploadError(w, http.StatusBadRequest, "Failed to read a pipeline spec file", "unexpected file extension "+header.Filename)
		return
	}
	spec, platform, err := ReadPackage(pkg)
	if err != nil {
		uploadError(w, http.StatusBadRequest, "Failed to read a pipeline spec file", err.Error())
		return
	}
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		name = q.Get("display_name")
	}
	if name == "" {
		name = strings.TrimSuffix(header.Filename, ext)
	}
	display := q.Get("display_name")
	if display == "" {
		display = name
	}
	v := &Version{ID: s.id("version"), Name: name, DisplayName: display, Description: q.Get("description"), Package: pkg, FileName: header.Filename}
	v.spec, _ = protojson.Marshal(spec)
	if platform != nil {
		v.platform, _ = protojson.Marshal(platform)
		v.HasPlatform = true
	}
	if !version {
		if !s.allowed(w, r, q.Get("namespace"), "create", "pipelines") {
			return
		}
		for _, p := range s.pipelines {
			if p.Name == name && p.Namespace == q.Get("namespace") {
				uploadError(w, http.StatusConflict, "Failed to create a pipeline and a pipeline version", "already exists")
				return
			}
		}
		p := &Pipeline{ID: s.id("pipeline"), Name: name, DisplayName: display, Description: q.Get("description"), Namespace: q.Get("namespace"), Versions: []*Version{v}}
		s.pipelines = append(s.pipelines, p)
		writeJSON(w, pipelineJSON(p))
		return
	}
	p := s.pipeline(q.Get("pipelineid"))
	if p == nil {
		uploadError(w, http.StatusBadRequest, "Failed to create a pipeline version", "pipeline id "+q.Get("pipelineid"))
		return
	}
	for _, old := range p.Versions {
		if old.Name == name {
			uploadError(w, http.StatusConflict, "Failed to create a pipeline version", "already exists")
			return
		}
	}
	p.Versions = append(p.Versions, v)
	writeJSON(w, versionJSON(p, v))
}

func (s *Server) pipeline(id string) *Pipeline {
	for _, p := range s.pipelines {
		if p.ID == id {
			return p
		}
	}
	return nil
}

func pipelineJSON(p *Pipeline) map[string]any {
	return map[string]any{"pipeline_id": p.ID, "name": p.Name, "display_name": p.DisplayName, "description": p.Description,
		"namespace": p.Namespace, "created_at": "2026-11-23T19:00:00Z"}
}

// versionJSON: the server returns a package with a platform document as
// {pipeline_spec, platform_spec}.
func versionJSON(p *Pipeline, v *Version) map[string]any {
	var spec any = v.spec
	if v.platform != nil {
		spec = map[string]json.RawMessage{"pipeline_spec": v.spec, "platform_spec": v.platform}
	}
	return map[string]any{"pipeline_id": p.ID, "pipeline_version_id": v.ID, "name": v.Name, "display_name": v.DisplayName,
		"description": v.Description, "created_at": "2026-11-23T19:00:00Z", "pipeline_spec": spec}
}

// filterName reads a v2beta1 Filter the way the server does: protojson, strictly.
func filterName(raw string) (string, bool, error) {
	if raw == "" {
		return "", false, nil
	}
	var f struct {
		Predicates []map[string]any `json:"predicates"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return "", false, err
	}
	if len(f.Predicates) != 1 {
		return "", false, fmt.Errorf("want one predicate")
	}
	pr := f.Predicates[0]
	for k := range pr {
		switch k {
		case "key", "operation", "string_value", "stringValue":
		default:
			return "", false, fmt.Errorf("unknown field %q in predicate", k)
		}
	}
	if pr["key"] != "name" && pr["key"] != "display_name" {
		return "", false, fmt.Errorf("unsupported key %v", pr["key"])
	}
	if op := pr["operation"]; op != "EQUALS" && op != float64(1) {
		return "", false, fmt.Errorf("unsupported operation %v", op)
	}
	v, ok := pr["string_value"].(string)
	if !ok {
		v, ok = pr["stringValue"].(string)
	}
	if !ok {
		return "", false, fmt.Errorf("predicate has no string_value")
	}
	return v, true, nil
}

// listQuery reads a list request's namespace and name filter as the API server does, after
// checking the caller may list resource there; when ok is false the answer is written.
func (s *Server) listQuery(w http.ResponseWriter, r *http.Request, resource string) (ns, name string, filtered, ok bool) {
	q := r.URL.Query()
	ns = q.Get("namespace")
	if !s.allowed(w, r, ns, "list", resource) {
		return "", "", false, false
	}
	name, filtered, err := filterName(q.Get("filter"))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: failed to parse filter: "+err.Error())
		return "", "", false, false
	}
	return ns, name, filtered, true
}

func (s *Server) listPipelines(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		gatewayError(w, http.StatusMethodNotAllowed, 12, "Method Not Allowed")
		return
	}
	ns, name, filtered, ok := s.listQuery(w, r, "pipelines")
	if !ok {
		return
	}
	list := []any{}
	for _, p := range s.pipelines {
		if (!filtered || p.Name == name) && p.Namespace == ns {
			list = append(list, pipelineJSON(p))
		}
	}
	writeJSON(w, map[string]any{"pipelines": list, "total_size": len(list)})
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, id string) {
	p := s.pipeline(id)
	if p == nil {
		gatewayError(w, http.StatusNotFound, 5, "Pipeline "+id+" not found")
		return
	}
	q := r.URL.Query()
	name, filtered, err := filterName(q.Get("filter"))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: failed to parse filter: "+err.Error())
		return
	}
	vs := append([]*Version(nil), p.Versions...)
	switch q.Get("sort_by") {
	case "", "created_at":
	case "created_at desc":
		for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
			vs[i], vs[j] = vs[j], vs[i]
		}
	default:
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: sort_by "+q.Get("sort_by"))
		return
	}
	list := []any{}
	for _, v := range vs {
		if !filtered || v.Name == name {
			j := versionJSON(p, v)
			if s.ListsWithoutSpec {
				delete(j, "pipeline_spec")
			}
			list = append(list, j)
		}
	}
	if q.Get("page_size") == "1" && len(list) > 1 {
		list = list[:1]
	}
	writeJSON(w, map[string]any{"pipeline_versions": list, "total_size": len(list)})
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, pid, vid string) {
	if p := s.pipeline(pid); p != nil {
		for _, v := range p.Versions {
			if v.ID == vid {
				writeJSON(w, versionJSON(p, v))
				return
			}
		}
	}
	gatewayError(w, http.StatusNotFound, 5, "PipelineVersion "+vid+" not found")
}

// runBody is a v2beta1 Run as a create request may carry it; anything else is an unknown field.
type runBody struct {
	ExperimentID             string `json:"experiment_id"`
	DisplayName              string `json:"display_name"`
	Description              string `json:"description"`
	ServiceAccount           string `json:"service_account"`
	PipelineVersionReference *struct {
		PipelineID        string `json:"pipeline_id"`
		PipelineVersionID string `json:"pipeline_version_id"`
	} `json:"pipeline_version_reference"`
	RuntimeConfig *struct {
		Parameters   map[string]any `json:"parameters"`
		PipelineRoot string         `json:"pipeline_root"`
	} `json:"runtime_config"`
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		gatewayError(w, http.StatusMethodNotAllowed, 12, "Method Not Allowed")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		gatewayError(w, http.StatusBadRequest, 3, "Content-Type "+ct)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body runBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		gatewayError(w, http.StatusBadRequest, 3, "proto: syntax error: "+err.Error())
		return
	}
	if body.DisplayName == "" {
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: The run name is empty. Please specify a valid name")
		return
	}
	ref := body.PipelineVersionReference
	if ref == nil || ref.PipelineID == "" || ref.PipelineVersionID == "" {
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: pipeline_version_reference needs pipeline_id and pipeline_version_id")
		return
	}
	p := s.pipeline(ref.PipelineID)
	var v *Version
	if p != nil {
		for _, x := range p.Versions {
			if x.ID == ref.PipelineVersionID {
				v = x
			}
		}
	}
	if v == nil {
		gatewayError(w, http.StatusNotFound, 5, "PipelineVersion "+ref.PipelineVersionID+" not found")
		return
	}
	// The run's namespace is its experiment's (KFP's GetValidExperimentNamespacePair).
	namespace := ""
	switch {
	case body.ExperimentID == "" && s.MultiUser:
		gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: Experiment id can not be empty in multi-user mode")
		return
	case body.ExperimentID != "":
		e := s.experiment(body.ExperimentID)
		if e == nil {
			gatewayError(w, http.StatusNotFound, 5, "Failed to fetch namespace for experiment "+body.ExperimentID+": ResourceNotFoundError: Experiment "+body.ExperimentID+" not found")
			return
		}
		namespace = e.Namespace
	}
	if s.MultiUser && (p.Namespace != "" && p.Namespace != namespace) {
		gatewayError(w, http.StatusBadRequest, 3, fmt.Sprintf("Invalid input error: pipeline %s belongs to namespace '%s', the run's experiment to '%s'", p.ID, p.Namespace, namespace))
		return
	}
	if !s.allowed(w, r, namespace, "create", "runs") {
		return
	}
	if body.RuntimeConfig != nil {
		if err := checkParameters(v.spec, body.RuntimeConfig.Parameters); err != nil {
			gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: "+err.Error())
			return
		}
	}
	var run map[string]any
	json.Unmarshal(raw, &run)
	run["run_id"] = s.id("run")
	if namespace != "" {
		run["namespace"] = namespace
	}
	s.runs = append(s.runs, run)
	out := map[string]any{}
	for k, v := range run {
		out[k] = v
	}
	out["state"] = "PENDING"
	out["storage_state"] = "AVAILABLE"
	writeJSON(w, out)
}

// allowed reports whether the caller may act in namespace (multi-user mode), else writes KFP's
// answer: an empty namespace is invalid for experiments and runs, a namespace the caller's token
// is not granted is denied as KFP's SubjectAccessReview denies it.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request, namespace, verb, resource string) bool {
	if !s.MultiUser {
		return true
	}
	if namespace == "" {
		if resource == "experiments" || resource == "runs" {
			gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: An experiment cannot have an empty namespace in multi-user mode")
			return false
		}
		return true // shared pipelines
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, ns := range s.Access[token] {
		if ns == namespace {
			return true
		}
	}
	gatewayError(w, http.StatusForbidden, 7, fmt.Sprintf("Failed to authorize with API: PermissionDenied: User 'system:serviceaccount:caller' is not authorized with reason:  (request: &ResourceAttributes{Namespace:%s,Verb:%s,Group:pipelines.kubeflow.org,Version:v1beta1,Resource:%s,})", namespace, verb, resource))
	return false
}

func (s *Server) experiment(id string) *Experiment {
	for _, e := range s.experiments {
		if e.ID == id {
			return e
		}
	}
	return nil
}

func experimentJSON(e *Experiment) map[string]any {
	return map[string]any{"experiment_id": e.ID, "display_name": e.Name, "description": e.Description, "namespace": e.Namespace,
		"created_at": "2026-11-23T19:00:00Z", "storage_state": "AVAILABLE"}
}

// experimentsEndpoint serves POST (create) and GET (list) of /apis/v2beta1/experiments.
func (s *Server) experimentsEndpoint(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		ns, name, filtered, ok := s.listQuery(w, r, "experiments")
		if !ok {
			return
		}
		list := []any{}
		for _, e := range s.experiments {
			if (!filtered || e.Name == name) && e.Namespace == ns {
				list = append(list, experimentJSON(e))
			}
		}
		writeJSON(w, map[string]any{"experiments": list, "total_size": len(list)})
	case http.MethodPost:
		var body struct {
			DisplayName string `json:"display_name"`
			Description string `json:"description"`
			Namespace   string `json:"namespace"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			gatewayError(w, http.StatusBadRequest, 3, "proto: syntax error: "+err.Error())
			return
		}
		if body.DisplayName == "" {
			gatewayError(w, http.StatusBadRequest, 3, "Invalid input error: Experiment name is empty. Please specify a valid experiment name")
			return
		}
		if !s.allowed(w, r, body.Namespace, "create", "experiments") {
			return
		}
		for _, e := range s.experiments {
			if e.Name == body.DisplayName && e.Namespace == body.Namespace {
				gatewayError(w, http.StatusConflict, 6, "Failed to create a experiment: Already exist error: Failed to create a new experiment. The name "+body.DisplayName+" already exists. Please specify a new name")
				return
			}
		}
		e := &Experiment{ID: s.id("experiment"), Name: body.DisplayName, Description: body.Description, Namespace: body.Namespace}
		s.experiments = append(s.experiments, e)
		writeJSON(w, experimentJSON(e))
	default:
		gatewayError(w, http.StatusMethodNotAllowed, 12, "Method Not Allowed")
	}
}

// checkParameters: every parameter is one of the pipeline's, of its declared type.
func checkParameters(spec json.RawMessage, params map[string]any) error {
	var s struct {
		Root struct {
			InputDefinitions struct {
				Parameters map[string]struct {
					ParameterType string `json:"parameterType"`
				} `json:"parameters"`
			} `json:"inputDefinitions"`
		} `json:"root"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return err
	}
	var extra []string
	for name := range params {
		if _, ok := s.Root.InputDefinitions.Parameters[name]; !ok {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("parameter(s) provided are not required by pipeline: %s", strings.Join(extra, ", "))
	}
	for name, v := range params {
		def := s.Root.InputDefinitions.Parameters[name]
		ok := false
		switch def.ParameterType {
		case "STRING":
			_, ok = v.(string)
		case "NUMBER_INTEGER":
			f, isNum := v.(float64)
			ok = isNum && f == float64(int64(f))
		case "NUMBER_DOUBLE":
			_, ok = v.(float64)
		case "BOOLEAN":
			_, ok = v.(bool)
		case "STRUCT":
			_, ok = v.(map[string]any)
		case "LIST":
			_, ok = v.([]any)
		}
		if !ok {
			return fmt.Errorf("input parameter %s requires type %s, but the parameter value %v is not of that type", name, def.ParameterType, v)
		}
	}
	return nil
}
