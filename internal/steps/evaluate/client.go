package evaluate

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Client calls one model of a V2 (Open Inference Protocol) REST server.
type Client struct {
	BaseURL string // e.g. http://iris-predictor.ns.svc.cluster.local or http://127.0.0.1:8080
	Model   string
	HTTP    *http.Client
	// TokenPath, when set, is a file holding a bearer token sent as Authorization with every
	// call (an endpoint behind Kubeflow's auth, e.g. an Istio authorization policy accepting
	// the step's service-account token). It is read per call: kubelet rotates projected tokens.
	TokenPath string
}

// authorize sets the Authorization header from TokenPath.
func (c *Client) authorize(req *http.Request) error {
	if c.TokenPath == "" {
		return nil
	}
	b, err := os.ReadFile(c.TokenPath)
	if err != nil {
		return fmt.Errorf("auth_token_path: read the bearer token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return fmt.Errorf("auth_token_path: %s is empty, want a bearer token", c.TokenPath)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// hint adds what to do to a refusal for want of credentials.
func (c *Client) hint(err error) error {
	var se *StatusError
	if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
		if c.TokenPath == "" {
			return fmt.Errorf("%w (the endpoint wants credentials: set auth_token_path, e.g. /var/run/secrets/kubernetes.io/serviceaccount/token)", err)
		}
		return fmt.Errorf("%w (with the bearer token of %s: does the endpoint's authorization policy accept this service account?)", err, c.TokenPath)
	}
	return err
}

func (c *Client) modelURL(suffix string) string {
	return strings.TrimRight(c.BaseURL, "/") + "/v2/models/" + c.Model + suffix
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// StatusError is a non-2xx answer: the URL, the status and the server's {"error": ...} message.
type StatusError struct {
	Method, URL string
	Status      int
	Message     string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Message)
}

func statusError(method, url string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	var e v2.ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if msg == "" {
		msg = "(empty body)"
	}
	return &StatusError{Method: method, URL: url, Status: resp.StatusCode, Message: msg}
}

func (c *Client) get(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if err := c.authorize(req); err != nil {
		return err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.hint(statusError(http.MethodGet, url, resp))
	}
	if v == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: decode the answer: %w", url, err)
	}
	return nil
}

// WaitReady polls the model's ready endpoint until it answers 200 or timeout passes, printing a
// progress line every progressEvery. A 404 fails at once: the server is up and has no such
// model, which waiting will not change.
func (c *Client) WaitReady(ctx context.Context, timeout, progressEvery time.Duration, log io.Writer) error {
	url := c.modelURL("/ready")
	start := time.Now()
	deadline := start.Add(timeout)
	nextLog := start
	for {
		err := c.get(ctx, url, nil)
		if err == nil {
			fmt.Fprintf(log, "model %s is ready at %s (waited %s)\n", c.Model, c.BaseURL, time.Since(start).Round(time.Millisecond))
			return nil
		}
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			return fmt.Errorf("model %s: %w%s", c.Model, err, c.knownModels(ctx))
		}
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("model %s not ready within %s: last answer: %w", c.Model, timeout, err)
		}
		if !now.Before(nextLog) {
			fmt.Fprintf(log, "waiting for model %s at %s to be ready (%s of %s): %v\n",
				c.Model, c.BaseURL, now.Sub(start).Round(time.Second), timeout, err)
			nextLog = now.Add(progressEvery)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(500*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// knownModels names the models the server has, for a 404's message.
func (c *Client) knownModels(ctx context.Context) string {
	var list struct {
		Models []string `json:"models"`
	}
	if err := c.get(ctx, strings.TrimRight(c.BaseURL, "/")+"/v2/models", &list); err != nil || len(list.Models) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the server has: %s)", strings.Join(list.Models, ", "))
}

// Metadata reads the model's metadata.
func (c *Client) Metadata(ctx context.Context) (*v2.ModelMetadata, error) {
	var md v2.ModelMetadata
	if err := c.get(ctx, c.modelURL(""), &md); err != nil {
		return nil, err
	}
	return &md, nil
}

// Infer sends n rows of cols FP32 features and asks for outputs. With binary set, the input
// and every output travel as binary tensors (the extension KServe's Python client uses by
// default); else as JSON. It returns the outputs by name.
func (c *Client) Infer(ctx context.Context, id string, rows []float32, n, cols int, outputs []string, binaryData bool) (map[string]v2.Tensor, error) {
	req := v2.InferRequest{ID: id}
	in := v2.RequestInput{Name: "input-0", Shape: []int64{int64(n), int64(cols)}, Datatype: "FP32"}
	var blob []byte
	if binaryData {
		blob = make([]byte, 0, 4*len(rows))
		for _, v := range rows {
			blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(v))
		}
		in.Parameters = v2.Parameters{v2.ParamBinaryDataSize: json.RawMessage(strconv.Itoa(len(blob)))}
	} else {
		in.Data = appendJSONFloats(nil, rows)
	}
	req.Inputs = []v2.RequestInput{in}
	for _, o := range outputs {
		ro := v2.RequestOutput{Name: o}
		if binaryData {
			ro.Parameters = v2.Parameters{v2.ParamBinaryData: json.RawMessage("true")}
		}
		req.Outputs = append(req.Outputs, ro)
	}
	header, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	url := c.modelURL("/infer")
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(append(header, blob...)))
	if err != nil {
		return nil, err
	}
	if binaryData {
		hreq.Header.Set("Content-Type", "application/octet-stream")
		hreq.Header.Set(v2.HeaderContentLength, strconv.Itoa(len(header)))
	} else {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if err := c.authorize(hreq); err != nil {
		return nil, err
	}
	resp, err := c.http().Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.hint(statusError(http.MethodPost, url, resp))
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("POST %s: read the answer: %w", url, err)
	}
	out, err := v2.DecodeInferResponse(body, resp.Header.Get(v2.HeaderContentLength))
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	return out, nil
}

// appendJSONFloats writes float32 features as a JSON array with the shortest text that reads
// back to the same float32, so the JSON and the binary request carry the same bits; NaN, a
// missing value, is null.
func appendJSONFloats(b []byte, f []float32) []byte {
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(v)) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	return append(b, ']')
}
