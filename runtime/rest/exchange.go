package rest

import (
	"context"
	"sync"

	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/service"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// exchange is the memory one V2 infer request reuses from decoding to its answer: the body,
// the parsed request, the protocol-neutral call, the decoded rows and outputs, and the answer.
// Handlers take one from exchanges and put it back once the answer is written, so a stream of
// same-shaped requests is served without allocating in this package or below.
type exchange struct {
	body []byte
	req  v2.InferRequest
	call infer.Call
	bins []v2.BinaryData // the binary tensors' bytes, one per input; Call.Inputs point here
	work infer.Work
	resp []byte
}

var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// retainBytes bounds the memory an exchange keeps for the next request: one that served a
// 60 MB body would otherwise hold it for the one-row requests after it.
const retainBytes = 64 << 10

// serve answers the infer request in x.body (headerLen: its Inference-Header-Content-Length,
// "" for all JSON) with model m's loaded version l: it parses, decodes, evaluates and encodes
// the answer into x.resp, returning the length of its JSON part when binary outputs follow.
// defaultID answers a request that has no id.
func (x *exchange) serve(ctx context.Context, svc *service.Service, m *registry.Model, l *registry.Loaded, headerLen, defaultID string) (jsonLen int, err error) {
	header, blobs, err := splitBody(x.body, headerLen)
	if err != nil {
		return 0, err
	}
	if err := v2.ParseInferRequestInto(&x.req, header); err != nil {
		return 0, err
	}
	if err := x.toCall(&x.req, blobs); err != nil {
		return 0, err
	}
	outs, err := svc.Infer(ctx, l, &x.call, &x.work)
	if err != nil {
		return 0, err
	}
	id := x.req.ID
	if id == "" {
		id = defaultID
	}
	x.resp, jsonLen = appendResponse(x.resp, m.Name, m.Version, id, outs)
	return jsonLen, nil
}

func getExchange() *exchange { return exchanges.Get().(*exchange) }

// putExchange gives x back for another request, unless a large request grew it (the collector
// then takes it).
func putExchange(x *exchange) {
	if cap(x.body) > retainBytes || cap(x.resp) > retainBytes || !x.work.Retained(retainBytes/4) {
		return
	}
	x.body, x.resp = x.body[:0], x.resp[:0]
	exchanges.Put(x)
}
