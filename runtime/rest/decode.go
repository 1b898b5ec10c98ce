package rest

import (
	"strconv"

	"github.com/gangboost/gangboost/internal/forest"
	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// splitBody separates the JSON header from the binary tensors when the request uses the binary
// tensor extension (Inference-Header-Content-Length set).
func splitBody(body []byte, headerLen string) (header, blobs []byte, err error) {
	if headerLen == "" {
		return body, nil, nil
	}
	n, perr := strconv.Atoi(headerLen)
	if perr != nil || n < 0 {
		return nil, nil, v2.Errorf(v2.KindInvalidInput, "header %s: %q is not a byte count", v2.HeaderContentLength, headerLen)
	}
	if n > len(body) {
		return nil, nil, v2.Errorf(v2.KindInvalidInput, "header %s is %d but the body has only %d bytes", v2.HeaderContentLength, n, len(body))
	}
	return body[:n], body[n:], nil
}

// toRequest checks a V2 request against model f and decodes its input tensor into rows.
func toRequest(req *v2.InferRequest, blobs []byte, f *forest.Model) (*infer.Request, error) {
	switch len(req.Inputs) {
	case 0:
		return nil, v2.Errorf(v2.KindInvalidInput, "request has no inputs; want one input of shape [N, %d]", f.NumFeatures())
	case 1:
	default:
		return nil, v2.Errorf(v2.KindInvalidInput, "request has %d inputs; the model takes one input of shape [N, %d]", len(req.Inputs), f.NumFeatures())
	}
	in := &req.Inputs[0]
	name := in.Name
	if name == "" {
		name = "(unnamed)"
	}
	if in.Datatype == "" {
		return nil, v2.Errorf(v2.KindInvalidInput, "input %s: no datatype", name)
	}
	if in.Shape == nil {
		return nil, v2.Errorf(v2.KindInvalidInput, "input %s: no shape", name)
	}
	want, err := v2.ElementCount(name, in.Shape)
	if err != nil {
		return nil, err
	}
	nrows, err := infer.FeatureShape(f, name, in.Shape)
	if err != nil {
		return nil, err
	}
	r := &infer.Request{ID: req.ID, NRows: nrows, Rows: make([]float32, 0, want)}
	size, isBinary, err := in.Parameters.Int(v2.ParamBinaryDataSize)
	if err != nil {
		return nil, err
	}
	if isBinary {
		if len(in.Data) > 0 {
			return nil, v2.Errorf(v2.KindInvalidInput, "input %s: both data and %s given", name, v2.ParamBinaryDataSize)
		}
		if size < 0 || size != int64(len(blobs)) {
			return nil, v2.Errorf(v2.KindInvalidInput, "input %s: %s is %d but %d bytes follow the JSON header", name, v2.ParamBinaryDataSize, size, len(blobs))
		}
		r.Rows, err = v2.DecodeBinaryData(r.Rows, name, in.Datatype, blobs, want)
	} else {
		if len(blobs) > 0 {
			return nil, v2.Errorf(v2.KindInvalidInput, "%d bytes follow the JSON header but no input has %s", len(blobs), v2.ParamBinaryDataSize)
		}
		r.Rows, err = v2.DecodeJSONData(r.Rows, name, in.Datatype, in.Data, want)
	}
	if err != nil {
		return nil, err
	}
	binaryAll := req.Parameters.Bool(v2.ParamBinaryDataOutput)
	for _, o := range req.Outputs {
		bin := binaryAll
		if v, ok := o.Parameters[v2.ParamBinaryData]; ok {
			bin = string(v) == "true"
		}
		r.Outputs = append(r.Outputs, infer.OutputRequest{Name: o.Name, Binary: bin})
	}
	if len(req.Outputs) == 0 && binaryAll {
		r.Outputs = []infer.OutputRequest{{Name: infer.OutputDefault, Binary: true}}
	}
	return r, nil
}
