package rest

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// marshalResponse is appendResponse written with json.Marshal: the reference the hand-written
// encoder must match byte for byte.
func marshalResponse(model, version, id string, outs []infer.Output) ([]byte, int) {
	resp := v2.InferResponse{ModelName: model, ModelVersion: version, ID: id, Outputs: make([]v2.ResponseOutput, len(outs))}
	var blobs []byte
	for i, o := range outs {
		ro := v2.ResponseOutput{Name: o.Name, Shape: o.Shape, Datatype: o.Datatype}
		if o.Binary {
			start := len(blobs)
			blobs = appendBinary(blobs, o)
			ro.Parameters = map[string]any{v2.ParamBinaryDataSize: len(blobs) - start}
		} else {
			ro.Data = jsonData(o)
		}
		resp.Outputs[i] = ro
	}
	js, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	if blobs == nil {
		return js, 0
	}
	return append(js, blobs...), len(js)
}

// jsonData is the flat data array of an output for json.Marshal. JSON has no NaN or infinity, so a non-finite
// prediction (possible for margins of extreme inputs) is written as null.
func jsonData(o infer.Output) any {
	if o.Datatype == "INT64" {
		ints := make([]int64, len(o.Values))
		for i, v := range o.Values {
			ints[i] = int64(v)
		}
		return ints
	}
	for _, v := range o.Values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			out := make([]*float32, len(o.Values))
			for i := range o.Values {
				if f := o.Values[i]; !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
					out[i] = &o.Values[i]
				}
			}
			return out
		}
	}
	return o.Values
}

func TestEncodeResponseMatchesMarshal(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-38, 1e-45,
		1e20, 1e21, 3.4e38, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0.33333334, 123456789}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]float32, 5000)
	for i := range random {
		random[i] = math.Float32frombits(rng.Uint32())
	}
	cases := []struct {
		model, version, id string
		outs               []infer.Output
	}{
		{"iris", "", "a1", []infer.Output{{Name: "output-0", Shape: []int64{1, 3}, Datatype: "FP32", Values: []float32{0.1, 0.2, 0.7}}}},
		{"iris", "1", "<id&\"quoted\">", []infer.Output{{Name: "predict", Shape: []int64{3}, Datatype: "INT64", Values: []float32{0, 2, 1}}}},
		{"m", "v", "ünïcode\u2028", []infer.Output{{Name: "margin", Shape: []int64{len64(special)}, Datatype: "FP32", Values: special}}},
		{"m", "", "x", []infer.Output{{Name: "random", Shape: []int64{len64(random)}, Datatype: "FP32", Values: random}}},
		{"m", "", "x", []infer.Output{
			{Name: "b", Shape: []int64{2}, Datatype: "FP32", Values: []float32{1, 2}, Binary: true},
			{Name: "j", Shape: nil, Datatype: "FP32", Values: []float32{}},
			{Name: "i", Shape: []int64{2}, Datatype: "INT64", Values: []float32{3, 4}, Binary: true},
		}},
		{"m", "", "x", nil},
	}
	for _, c := range cases {
		got, gotLen := appendResponse(nil, c.model, c.version, c.id, c.outs)
		want, wantLen := marshalResponse(c.model, c.version, c.id, c.outs)
		if !bytes.Equal(got, want) || gotLen != wantLen {
			t.Errorf("appendResponse differs from json.Marshal (json length %d vs %d):\ngot  %.300q\nwant %.300q", gotLen, wantLen, got, want)
		}
	}
}

func len64[T any](s []T) int64 { return int64(len(s)) }

// TestAppendStringMatchesMarshal: every byte, alone and inside a name, is written as
// json.Marshal writes it.
func TestAppendStringMatchesMarshal(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "in" + string([]byte{byte(c)}) + "put-0"} {
			want, _ := json.Marshal(s)
			if got := appendString(nil, s); !bytes.Equal(got, want) {
				t.Errorf("byte %#x: %q, json.Marshal gives %q", c, got, want)
			}
		}
	}
}
