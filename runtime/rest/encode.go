package rest

import (
	"encoding/binary"
	"encoding/json"
	"math"

	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// encodeResponse builds the infer response body. Outputs asked for as binary go after the JSON
// part, whose length it returns (0 when no output is binary).
func encodeResponse(model, version, id string, outs []infer.Output) (body []byte, jsonLen int, err error) {
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
		return nil, 0, v2.Errorf(v2.KindInternal, "encode response: %v", err)
	}
	if blobs == nil {
		return js, 0, nil
	}
	return append(js, blobs...), len(js), nil
}

// jsonData is the flat data array of an output. JSON has no NaN or infinity, so a non-finite
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

func appendBinary(b []byte, o infer.Output) []byte {
	for _, v := range o.Values {
		if o.Datatype == "INT64" {
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(v)))
		} else {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}
