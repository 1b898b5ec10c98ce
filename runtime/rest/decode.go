package rest

import (
	"strconv"

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

// toCall turns a V2 REST request into the protocol-neutral call x.call, reusing its memory:
// each input's data is its JSON "data" or, with parameters.binary_data_size, the next that many
// bytes after the JSON header, in input order (binary tensor extension). The inputs' data point
// into req and x.bins (an interface holding a pointer costs no allocation), so both must
// outlive the call.
func (x *exchange) toCall(req *v2.InferRequest, blobs []byte) error {
	c := &x.call
	*c = infer.Call{ID: req.ID, Columns: req.Parameters.String(v2.ParamContentType) == infer.ContentTypeColumns,
		Inputs: c.Inputs[:0], Outputs: c.Outputs[:0]}
	if cap(x.bins) < len(req.Inputs) {
		x.bins = make([]v2.BinaryData, len(req.Inputs))
	}
	x.bins = x.bins[:len(req.Inputs)]
	off := 0
	for i := range req.Inputs {
		in := &req.Inputs[i]
		input := infer.Input{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape}
		size, isBinary, err := in.Parameters.Int(v2.ParamBinaryDataSize)
		if err != nil {
			return err
		}
		switch {
		case isBinary:
			if len(in.Data) > 0 {
				return v2.Errorf(v2.KindInvalidInput, "input %s: both data and %s given", in.Name, v2.ParamBinaryDataSize)
			}
			if size < 0 || size > int64(len(blobs)-off) {
				return v2.Errorf(v2.KindInvalidInput, "input %s: %s is %d but %d bytes follow the JSON header for it", in.Name, v2.ParamBinaryDataSize, size, len(blobs)-off)
			}
			x.bins[i] = v2.BinaryData(blobs[off : off+int(size)])
			input.Data = &x.bins[i]
			off += int(size)
		case len(in.Data) > 0:
			input.Data = (*v2.JSONData)(&in.Data)
		}
		c.Inputs = append(c.Inputs, input)
	}
	if off != len(blobs) {
		if off == 0 {
			return v2.Errorf(v2.KindInvalidInput, "%d bytes follow the JSON header but no input has %s", len(blobs), v2.ParamBinaryDataSize)
		}
		return v2.Errorf(v2.KindInvalidInput, "%d bytes follow the JSON header but the inputs' %s add up to %d", len(blobs), v2.ParamBinaryDataSize, off)
	}
	binaryAll := req.Parameters.Bool(v2.ParamBinaryDataOutput)
	for _, o := range req.Outputs {
		bin := binaryAll
		if v, ok := o.Parameters[v2.ParamBinaryData]; ok {
			bin = string(v) == "true"
		}
		c.Outputs = append(c.Outputs, infer.OutputRequest{Name: o.Name, Binary: bin})
	}
	if len(req.Outputs) == 0 && binaryAll {
		c.Outputs = append(c.Outputs, infer.OutputRequest{Name: infer.OutputDefault, Binary: true})
	}
	return nil
}
