// Package grpcserver serves inference.GRPCInferenceService, the V2 / Open Inference Protocol's
// gRPC form as KServe defines it (grpc_predict_v2.proto), including raw_input_contents and
// raw_output_contents.
package grpcserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/service"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Options are the gRPC server's limits.
type Options struct {
	MaxMessageBytes int
}

// Server is the gRPC server.
type Server struct {
	inference.UnimplementedGRPCInferenceServiceServer
	svc *service.Service
	g   *grpc.Server
	log *slog.Logger
}

// New builds the server; Serve starts it.
func New(svc *service.Service, opts Options, log *slog.Logger) *Server {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 64 << 20
	}
	s := &Server{svc: svc, log: log}
	s.g = grpc.NewServer(grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		// Calls run on long-lived workers rather than a goroutine each: a fresh goroutine's
		// stack grows (runtime.morestack, copying it) on every call that reaches the tree
		// walker's stack buffer, which cost more CPU than the evaluation itself. A call that
		// finds every worker busy still gets a goroutine of its own.
		grpc.NumStreamWorkers(uint32(streamWorkers())),
		grpc.ForceServerCodecV2(newLenientCodec()),
		grpc.ChainUnaryInterceptor(s.recoverAndLog, rejectMalformedUnary),
		grpc.ChainStreamInterceptor(rejectMalformedStream))
	inference.RegisterGRPCInferenceServiceServer(s.g, s)
	healthpb.RegisterHealthServer(s.g, &health{ready: func() bool { ok, _ := svc.Registry.Ready(); return ok }})
	return s
}

// streamWorkers is how many calls run on workers at once. With one worker per core (grpc-go's
// suggestion) most calls of a loaded server still found them busy; 16 per core took the server's
// CPU per one-row call from 45 to 22 µs with 32 calls in flight on one core of the 2-core VM,
// each worker keeping the stack it grew.
func streamWorkers() int {
	return 16 * runtime.GOMAXPROCS(0)
}

// Serve serves on ln until GracefulStop.
func (s *Server) Serve(ln net.Listener) error { return s.g.Serve(ln) }

// GracefulStop stops accepting and waits for in-flight calls.
func (s *Server) GracefulStop() { s.g.GracefulStop() }

// Stop closes every connection and cancels in-flight calls' contexts, which stops their
// evaluation.
func (s *Server) Stop() { s.g.Stop() }

// toStatus maps an error through the one v2 table; an error that already is a gRPC status
// (from grpc itself or the health service) keeps its code.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(v2.GRPCCode(err), err.Error())
}

func (s *Server) recoverAndLog(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "internal error: %v", r)
			s.log.Error("panic in gRPC handler", "method", info.FullMethod, "panic", fmt.Sprint(r))
		}
		if mi, ok := req.(*inference.ModelInferRequest); ok {
			s.svc.Metrics.ObserveRequest(s.svc.ModelLabel(mi.GetModelName()), "grpc-v2", status.Code(err).String(), time.Since(start))
		}
		if err != nil {
			s.log.Info("grpc request", "method", info.FullMethod, "code", status.Code(err).String(), "error", err.Error())
		}
	}()
	resp, err = h(ctx, req)
	return resp, toStatus(err)
}

func (s *Server) ServerLive(context.Context, *inference.ServerLiveRequest) (*inference.ServerLiveResponse, error) {
	return &inference.ServerLiveResponse{Live: true}, nil
}

func (s *Server) ServerReady(context.Context, *inference.ServerReadyRequest) (*inference.ServerReadyResponse, error) {
	ok, _ := s.svc.Registry.Ready()
	return &inference.ServerReadyResponse{Ready: ok}, nil
}

func (s *Server) ModelReady(_ context.Context, r *inference.ModelReadyRequest) (*inference.ModelReadyResponse, error) {
	m, err := s.svc.Registry.Get(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, err
	}
	ok, _ := m.Ready()
	return &inference.ModelReadyResponse{Ready: ok}, nil
}

func (s *Server) ServerMetadata(context.Context, *inference.ServerMetadataRequest) (*inference.ServerMetadataResponse, error) {
	return &inference.ServerMetadataResponse{Name: service.Name, Version: service.Version, Extensions: service.Extensions}, nil
}

func (s *Server) ModelMetadata(_ context.Context, r *inference.ModelMetadataRequest) (*inference.ModelMetadataResponse, error) {
	m, l, err := s.svc.Acquire(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, err
	}
	defer l.Release()
	md := infer.Metadata(m.Name, m.Version, l.Forest)
	resp := &inference.ModelMetadataResponse{Name: md.Name, Versions: md.Versions, Platform: md.Platform}
	for _, t := range md.Inputs {
		resp.Inputs = append(resp.Inputs, &inference.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	for _, t := range md.Outputs {
		resp.Outputs = append(resp.Outputs, &inference.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	return resp, nil
}

func (s *Server) RepositoryModelLoad(_ context.Context, r *inference.RepositoryModelLoadRequest) (*inference.RepositoryModelLoadResponse, error) {
	if err := s.svc.Registry.Load(r.GetModelName()); err != nil {
		return nil, err
	}
	return &inference.RepositoryModelLoadResponse{ModelName: r.GetModelName(), IsLoaded: true}, nil
}

func (s *Server) RepositoryModelUnload(_ context.Context, r *inference.RepositoryModelUnloadRequest) (*inference.RepositoryModelUnloadResponse, error) {
	if err := s.svc.Registry.Unload(r.GetModelName()); err != nil {
		return nil, err
	}
	return &inference.RepositoryModelUnloadResponse{ModelName: r.GetModelName(), IsUnloaded: true}, nil
}

func (s *Server) ModelInfer(ctx context.Context, r *inference.ModelInferRequest) (*inference.ModelInferResponse, error) {
	m, l, err := s.svc.Acquire(r.GetModelName(), r.GetModelVersion())
	if err != nil {
		return nil, err
	}
	defer l.Release()
	// The response copies what it needs from the outputs (contents) or encodes them (raw), so
	// the exchange goes back to the pool when this returns.
	x := exchanges.Get().(*exchange)
	defer putExchange(x)
	if err := x.toCall(r); err != nil {
		return nil, err
	}
	outs, err := s.svc.Infer(ctx, l, &x.call, &x.work)
	if err != nil {
		return nil, err
	}
	id := r.GetId()
	resp := &inference.ModelInferResponse{ModelName: m.Name, ModelVersion: m.Version, Id: id}
	// Raw output contents are used when the request sent raw inputs, as KServe's server does, so
	// a client gets back the encoding it sent.
	raw := len(r.GetRawInputContents()) > 0
	for _, o := range outs {
		t := &inference.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: o.Datatype, Shape: slices.Clone(o.Shape)}
		if raw {
			resp.RawOutputContents = append(resp.RawOutputContents, rawBytes(o))
		} else {
			t.Contents = contents(o)
		}
		resp.Outputs = append(resp.Outputs, t)
	}
	return resp, nil
}

func rawBytes(o infer.Output) []byte {
	var b []byte
	for _, v := range o.Values {
		if o.Datatype == "INT64" {
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(v)))
		} else {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

func contents(o infer.Output) *inference.InferTensorContents {
	if o.Datatype == "INT64" {
		ints := make([]int64, len(o.Values))
		for i, v := range o.Values {
			ints[i] = int64(v)
		}
		return &inference.InferTensorContents{Int64Contents: ints}
	}
	// A copy: o.Values is pooled memory, and grpc-go encodes the response after this returns.
	return &inference.InferTensorContents{Fp32Contents: slices.Clone(o.Values)}
}

// exchange is the memory one ModelInfer call reuses: the protocol-neutral call, its raw
// inputs' bytes and the decode and evaluation Work. Calls take one from exchanges and put it
// back when the handler returns (the response copies what it needs).
type exchange struct {
	call infer.Call
	raw  []v2.BinaryData // raw_input_contents, one per input; call.Inputs point here
	work infer.Work
}

var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// putExchange keeps x for another call unless a large request grew it.
func putExchange(x *exchange) {
	if x.work.Retained(16 << 10) {
		exchanges.Put(x)
	}
}

// toCall turns a gRPC request into the protocol-neutral call x.call, reusing its memory: each
// input's data is its typed contents or, when the request uses raw_input_contents, the entry at
// the input's index. The inputs' data point into r and x.raw, which must outlive the call.
func (x *exchange) toCall(r *inference.ModelInferRequest) error {
	ins := r.GetInputs()
	rawIn := r.GetRawInputContents()
	if len(rawIn) > 0 && len(rawIn) != len(ins) {
		return v2.Errorf(v2.KindInvalidInput, "raw_input_contents has %d entries for %d inputs", len(rawIn), len(ins))
	}
	c := &x.call
	*c = infer.Call{ID: r.GetId(), Columns: r.GetParameters()[v2.ParamContentType].GetStringParam() == infer.ContentTypeColumns,
		Inputs: c.Inputs[:0], Outputs: c.Outputs[:0]}
	if cap(x.raw) < len(rawIn) {
		x.raw = make([]v2.BinaryData, len(rawIn))
	}
	x.raw = x.raw[:len(rawIn)]
	for i, in := range ins {
		input := infer.Input{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: in.GetShape()}
		switch {
		case len(rawIn) > 0:
			if in.GetContents() != nil {
				return v2.Errorf(v2.KindInvalidInput, "input %s: both contents and raw_input_contents given", in.GetName())
			}
			x.raw[i] = v2.BinaryData(rawIn[i])
			input.Data = &x.raw[i]
		case in.GetContents() != nil:
			input.Data = typedContents{in.GetContents()}
		}
		c.Inputs = append(c.Inputs, input)
	}
	for _, o := range r.GetOutputs() {
		c.Outputs = append(c.Outputs, infer.OutputRequest{Name: o.GetName()})
	}
	return nil
}

// typedContents reads InferTensorContents; the field used must match the datatype, as the
// spec says.
type typedContents struct {
	c *inference.InferTensorContents
}

// count is the number of elements in the field datatype uses; -1 for a datatype without one.
func (t typedContents) count(datatype string) int {
	c := t.c
	switch datatype {
	case "FP32":
		return len(c.GetFp32Contents())
	case "FP64":
		return len(c.GetFp64Contents())
	case "INT8", "INT16", "INT32":
		return len(c.GetIntContents())
	case "INT64":
		return len(c.GetInt64Contents())
	case "UINT8", "UINT16", "UINT32":
		return len(c.GetUintContents())
	case "UINT64":
		return len(c.GetUint64Contents())
	case "BOOL":
		return len(c.GetBoolContents())
	}
	return -1
}

// Check requires the datatype's field to hold exactly want elements (an unknown datatype is
// refused by Append, naming it).
func (t typedContents) Check(name, datatype string, want int) error {
	if n := t.count(datatype); n >= 0 && n != want {
		return v2.Errorf(v2.KindInvalidInput, "input %s: shape declares %d elements, the %s contents hold %d", name, want, datatype, n)
	}
	return nil
}

func (t typedContents) Append(dst []float32, name, datatype string, _ []int64, want int) ([]float32, error) {
	switch datatype {
	case "BYTES":
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: datatype BYTES is not supported: the model takes numeric features", name)
	case "FP16":
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: datatype FP16 has no typed contents field; send it in raw_input_contents", name)
	}
	n := t.count(datatype)
	if n < 0 {
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: unknown datatype %q", name, datatype)
	}
	if n != want {
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: shape declares %d elements, the %s contents hold %d", name, want, datatype, n)
	}
	c := t.c
	switch datatype {
	case "FP32":
		return append(dst, c.GetFp32Contents()...), nil
	case "FP64":
		return appendAs(dst, c.GetFp64Contents()), nil
	case "INT8", "INT16", "INT32":
		return appendAs(dst, c.GetIntContents()), nil
	case "INT64":
		return appendAs(dst, c.GetInt64Contents()), nil
	case "UINT8", "UINT16", "UINT32":
		return appendAs(dst, c.GetUintContents()), nil
	case "UINT64":
		return appendAs(dst, c.GetUint64Contents()), nil
	}
	for _, v := range c.GetBoolContents() {
		dst = append(dst, b2f(v))
	}
	return dst, nil
}

func appendAs[T int32 | int64 | uint32 | uint64 | float64](dst []float32, vals []T) []float32 {
	for _, v := range vals {
		dst = append(dst, float32(v))
	}
	return dst
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
