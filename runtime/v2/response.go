package v2

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The client's side of an infer call: reading the answer a V2 server sends, in JSON or with
// binary tensors after the JSON part.

// Tensor is one output of an infer answer as a client reads it: Values hold every element in
// row-major order (FP32 values exactly, INT64 labels as whole numbers), NaN for JSON null.
type Tensor struct {
	Shape    []int64
	Datatype string
	Values   []float64
}

// maxAnswerElements bounds the element count a shape may declare: the values are sized from
// the bytes that came, and the shape only has to agree with them, but its product must not
// overflow on the way.
const maxAnswerElements = 1 << 40

// DecodeInferResponse reads an infer answer: body is the JSON part followed by the binary
// tensors (in output order, each binary_data_size bytes) when jsonLength, the
// Inference-Header-Content-Length header, is set. It returns every output by name.
func DecodeInferResponse(body []byte, jsonLength string) (map[string]Tensor, error) {
	header, blobs := body, []byte(nil)
	if jsonLength != "" {
		n, err := strconv.Atoi(jsonLength)
		if err != nil || n < 0 || n > len(body) {
			return nil, fmt.Errorf("%s %q does not fit the %d-byte answer", HeaderContentLength, jsonLength, len(body))
		}
		header, blobs = body[:n], body[n:]
	}
	var r InferResponse
	d := json.NewDecoder(bytes.NewReader(header))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	out := make(map[string]Tensor, len(r.Outputs))
	for _, o := range r.Outputs {
		// The shape is the server's word only: the values are sized from the bytes that came.
		count, ok := answerElements(o.Shape)
		if !ok {
			return nil, fmt.Errorf("output %s: shape %v is not a tensor shape", o.Name, o.Shape)
		}
		t := Tensor{Shape: o.Shape, Datatype: o.Datatype}
		if raw, ok := o.Parameters[ParamBinaryDataSize]; ok {
			num, _ := raw.(json.Number)
			size, err := strconv.Atoi(string(num))
			if err != nil || size < 0 || size > len(blobs) {
				return nil, fmt.Errorf("output %s: binary_data_size %v does not fit the %d bytes left", o.Name, raw, len(blobs))
			}
			vals, err := decodeAnswerBinary(o.Name, o.Datatype, blobs[:size])
			if err != nil {
				return nil, err
			}
			t.Values, blobs = vals, blobs[size:]
		} else {
			vals, err := decodeAnswerJSON(o.Name, o.Datatype, o.Data)
			if err != nil {
				return nil, err
			}
			t.Values = vals
		}
		if int64(len(t.Values)) != count {
			return nil, fmt.Errorf("output %s: shape %v holds %d values, the answer %d", o.Name, o.Shape, count, len(t.Values))
		}
		out[o.Name] = t
	}
	return out, nil
}

// answerElements is the element count of a shape; false for a negative dimension or a count
// beyond what any answer could hold.
func answerElements(shape []int64) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > maxAnswerElements/d) {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// decodeAnswerJSON reads an output's flat "data" array, decoded with UseNumber: absent data is
// no values, null a missing one.
func decodeAnswerJSON(name, datatype string, data any) ([]float64, error) {
	if data == nil {
		return nil, nil
	}
	elems, ok := data.([]any)
	if !ok {
		return nil, fmt.Errorf("output %s: data is %T, want a flat array of numbers", name, data)
	}
	vals := make([]float64, 0, len(elems))
	for i, e := range elems {
		if e == nil {
			vals = append(vals, math.NaN())
			continue
		}
		num, ok := e.(json.Number)
		if !ok {
			return nil, fmt.Errorf("output %s: data[%d] is %T, want a number or null", name, i, e)
		}
		f, err := parseAnswerNumber(num, datatype)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", name, err)
		}
		vals = append(vals, f)
	}
	return vals, nil
}

// parseAnswerNumber reads one JSON element: FP32 text as float32 (the server writes each
// float32's shortest text), INT64 as an integer.
func parseAnswerNumber(v json.Number, datatype string) (float64, error) {
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

// decodeAnswerBinary reads a binary output tensor of the datatypes this runtime answers with.
func decodeAnswerBinary(name, datatype string, b []byte) ([]float64, error) {
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
