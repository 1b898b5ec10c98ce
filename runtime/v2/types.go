// Package v2 holds the V2 / Open Inference Protocol types and the codecs that turn request
// tensors (JSON, nested or flat, and the binary tensor extension) into rows of float32 features
// and predictions back into response tensors, and a client's reading of an infer answer
// (DecodeInferResponse). It also holds the one table that maps error kinds
// to REST and gRPC status.
//
// Spec: https://github.com/kserve/open-inference-protocol/blob/main/specification/protocol/inference_rest.md
// Binary extension: https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_binary_data.md
package v2

import "encoding/json"

// HeaderContentLength carries the length of the JSON part of a body that also holds binary
// tensors (binary tensor extension).
const HeaderContentLength = "Inference-Header-Content-Length"

// Parameter names of the binary tensor extension.
const (
	ParamBinaryDataSize   = "binary_data_size"
	ParamBinaryData       = "binary_data"
	ParamBinaryDataOutput = "binary_data_output"
)

// ParamContentType is the request parameter KServe's client sets to "pd" for a pandas
// DataFrame sent as one input per column.
const ParamContentType = "content_type"

// InferRequest is the body of POST .../infer. Data stays raw until the codec reads it into
// float32 rows, so a large tensor is parsed once, without an []any per element.
type InferRequest struct {
	ID         string          `json:"id,omitempty"`
	Parameters Parameters      `json:"parameters,omitempty"`
	Inputs     []RequestInput  `json:"inputs"`
	Outputs    []RequestOutput `json:"outputs,omitempty"`
}

// RequestInput is one input tensor.
type RequestInput struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters Parameters      `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// RequestOutput asks for one output by name.
type RequestOutput struct {
	Name       string     `json:"name"`
	Parameters Parameters `json:"parameters,omitempty"`
}

// Parameters are the free-form parameters of requests, inputs and outputs.
type Parameters map[string]json.RawMessage

// Bool reads a boolean parameter; absent or not a boolean is false.
func (p Parameters) Bool(name string) bool {
	v, ok := p[name]
	return ok && string(v) == "true"
}

// String reads a string parameter; absent or not a string is "".
func (p Parameters) String(name string) string {
	v, ok := p[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// Int reads an integer parameter.
func (p Parameters) Int(name string) (int64, bool, error) {
	v, ok := p[name]
	if !ok {
		return 0, false, nil
	}
	if n, ok := plainInt(v); ok {
		return n, true, nil
	}
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, true, Errorf(KindInvalidInput, "parameter %s: want an integer, got %s", name, v)
	}
	return n, true, nil
}

// plainInt reads a JSON integer as clients write one (-?[1-9][0-9]* or 0, in range) without
// encoding/json's allocations; false for anything else, which encoding/json then reads or refuses.
func plainInt(v []byte) (int64, bool) {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	n := int64(0)
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(v) {
		n = -n
	}
	return n, true
}

// InferResponse is the body of a successful infer call.
type InferResponse struct {
	ModelName    string           `json:"model_name"`
	ModelVersion string           `json:"model_version,omitempty"`
	ID           string           `json:"id"`
	Parameters   map[string]any   `json:"parameters,omitempty"`
	Outputs      []ResponseOutput `json:"outputs"`
}

// ResponseOutput is one output tensor. Exactly one of Data and the binary part is used.
type ResponseOutput struct {
	Name       string         `json:"name"`
	Shape      []int64        `json:"shape"`
	Datatype   string         `json:"datatype"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Data       any            `json:"data,omitempty"`
}

// ServerMetadata is GET /v2.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

// ModelMetadata is GET /v2/models/{m}.
type ModelMetadata struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions,omitempty"`
	Platform string           `json:"platform"`
	Inputs   []TensorMetadata `json:"inputs"`
	Outputs  []TensorMetadata `json:"outputs"`
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

// TensorMetadata describes an input or output; -1 is a variable dimension.
type TensorMetadata struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}
