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
	"strconv"
	"strings"
	"time"
)

// The binary tensor extension's names (runtime/v2 holds the server's copy; a client must not
// import the server).
const (
	headerContentLength = "Inference-Header-Content-Length"
	paramBinaryDataSize = "binary_data_size"
)

// Client calls one model of a V2 (Open Inference Protocol) REST server.
type Client struct {
	BaseURL string // e.g. http://iris-predictor.ns.svc.cluster.local or http://127.0.0.1:8080
	Model   string
	HTTP    *http.Client
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
	var e struct {
		Error string `json:"error"`
	}
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
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(http.MethodGet, url, resp)
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

// TensorMetadata is one input or output in the model's metadata.
type TensorMetadata struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// ModelMetadata is GET /v2/models/<m>.
type ModelMetadata struct {
	Name    string           `json:"name"`
	Inputs  []TensorMetadata `json:"inputs"`
	Outputs []TensorMetadata `json:"outputs"`
}

// Output returns the output named name, if the model has it.
func (m *ModelMetadata) Output(name string) (TensorMetadata, bool) {
	for _, o := range m.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return TensorMetadata{}, false
}

// Metadata reads the model's metadata.
func (c *Client) Metadata(ctx context.Context) (*ModelMetadata, error) {
	var md ModelMetadata
	if err := c.get(ctx, c.modelURL(""), &md); err != nil {
		return nil, err
	}
	return &md, nil
}

// Tensor is one output of an answer; Values hold every element in row-major order (FP32
// values exactly, INT64 labels as whole numbers), NaN for JSON null.
type Tensor struct {
	Shape    []int64
	Datatype string
	Values   []float64
}

type requestOutput struct {
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

type requestInput struct {
	Name       string         `json:"name"`
	Shape      []int64        `json:"shape"`
	Datatype   string         `json:"datatype"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Data       any            `json:"data,omitempty"`
}

type inferRequest struct {
	ID      string          `json:"id"`
	Inputs  []requestInput  `json:"inputs"`
	Outputs []requestOutput `json:"outputs"`
}

type responseOutput struct {
	Name       string                     `json:"name"`
	Shape      []int64                    `json:"shape"`
	Datatype   string                     `json:"datatype"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	Data       []json.Number              `json:"data"`
}

type inferResponse struct {
	ModelName string           `json:"model_name"`
	ID        string           `json:"id"`
	Outputs   []responseOutput `json:"outputs"`
}

// Infer sends n rows of cols FP32 features and asks for outputs. With binary set, the input
// and every output travel as binary tensors (the extension KServe's Python client uses by
// default); else as JSON. It returns the outputs by name.
func (c *Client) Infer(ctx context.Context, id string, rows []float32, n, cols int, outputs []string, binaryData bool) (map[string]Tensor, error) {
	req := inferRequest{ID: id}
	in := requestInput{Name: "input-0", Shape: []int64{int64(n), int64(cols)}, Datatype: "FP32"}
	var blob []byte
	if binaryData {
		blob = make([]byte, 0, 4*len(rows))
		for _, v := range rows {
			blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(v))
		}
		in.Parameters = map[string]any{paramBinaryDataSize: len(blob)}
	} else {
		in.Data = jsonFloats(rows)
	}
	req.Inputs = []requestInput{in}
	for _, o := range outputs {
		ro := requestOutput{Name: o}
		if binaryData {
			ro.Parameters = map[string]any{"binary_data": true}
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
		hreq.Header.Set(headerContentLength, strconv.Itoa(len(header)))
	} else {
		hreq.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(http.MethodPost, url, resp)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("POST %s: read the answer: %w", url, err)
	}
	out, err := decodeResponse(body, resp.Header.Get(headerContentLength))
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	return out, nil
}

// jsonFloats writes float32 features with the shortest text that reads back to the same
// float32, so the JSON and the binary request carry the same bits.
type jsonFloats []float32

func (f jsonFloats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 10*len(f)+2)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(v)) {
			b = append(b, "null"...) // a missing value
			continue
		}
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	return append(b, ']'), nil
}

// decodeResponse splits an answer into its JSON part and binary tensors (in output order, each
// binary_data_size bytes) and reads every output's values.
func decodeResponse(body []byte, jsonLength string) (map[string]Tensor, error) {
	header, blobs := body, []byte(nil)
	if jsonLength != "" {
		n, err := strconv.Atoi(jsonLength)
		if err != nil || n < 0 || n > len(body) {
			return nil, fmt.Errorf("%s %q does not fit the %d-byte answer", headerContentLength, jsonLength, len(body))
		}
		header, blobs = body[:n], body[n:]
	}
	var r inferResponse
	d := json.NewDecoder(bytes.NewReader(header))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	out := make(map[string]Tensor, len(r.Outputs))
	for _, o := range r.Outputs {
		// The shape is the server's word only: the values are sized from the bytes that came.
		count, ok := elements(o.Shape)
		if !ok {
			return nil, fmt.Errorf("output %s: shape %v is not a tensor shape", o.Name, o.Shape)
		}
		t := Tensor{Shape: o.Shape, Datatype: o.Datatype}
		if raw, ok := o.Parameters[paramBinaryDataSize]; ok {
			size, err := strconv.Atoi(string(raw))
			if err != nil || size < 0 || size > len(blobs) {
				return nil, fmt.Errorf("output %s: binary_data_size %s does not fit the %d bytes left", o.Name, raw, len(blobs))
			}
			vals, err := decodeBinary(o.Name, o.Datatype, blobs[:size])
			if err != nil {
				return nil, err
			}
			t.Values, blobs = vals, blobs[size:]
		} else {
			t.Values = make([]float64, 0, len(o.Data))
			for _, v := range o.Data {
				f, err := parseNumber(v, o.Datatype)
				if err != nil {
					return nil, fmt.Errorf("output %s: %w", o.Name, err)
				}
				t.Values = append(t.Values, f)
			}
		}
		if int64(len(t.Values)) != count {
			return nil, fmt.Errorf("output %s: shape %v holds %d values, the answer %d", o.Name, o.Shape, count, len(t.Values))
		}
		out[o.Name] = t
	}
	return out, nil
}

// elements is the element count of a shape; false for a negative dimension or a count beyond
// what any answer could hold.
func elements(shape []int64) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > (1<<40)/d) {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// parseNumber reads one JSON element: FP32 text as float32 (the server writes each float32's
// shortest text), INT64 as an integer; "" is a JSON null (NaN).
func parseNumber(v json.Number, datatype string) (float64, error) {
	if v == "" {
		return math.NaN(), nil
	}
	switch datatype {
	case "INT64":
		n, err := strconv.ParseInt(string(v), 10, 64)
		return float64(n), err
	case "FP32":
		f, err := strconv.ParseFloat(string(v), 32)
		return float64(float32(f)), err
	default:
		return strconv.ParseFloat(string(v), 64)
	}
}

func decodeBinary(name, datatype string, b []byte) ([]float64, error) {
	switch datatype {
	case "FP32":
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("output %s: %d bytes of FP32", name, len(b))
		}
		out := make([]float64, len(b)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return out, nil
	case "INT64":
		if len(b)%8 != 0 {
			return nil, fmt.Errorf("output %s: %d bytes of INT64", name, len(b))
		}
		out := make([]float64, len(b)/8)
		for i := range out {
			out[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
		}
		return out, nil
	}
	return nil, fmt.Errorf("output %s: datatype %s is not one this client reads (FP32, INT64)", name, datatype)
}
