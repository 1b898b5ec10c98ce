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
	s.g = grpc.NewServer(grpc.MaxRecvMsgSize(opts.MaxMessageBytes), grpc.ChainUnaryInterceptor(s.recoverAndLog))
	inference.RegisterGRPCInferenceServiceServer(s.g, s)
	healthpb.RegisterHealthServer(s.g, &health{ready: func() bool { ok, _ := svc.Registry.Ready(); return ok }})
	return s
}

// Serve serves on ln until GracefulStop.
func (s *Server) Serve(ln net.Listener) error { return s.g.Serve(ln) }

// GracefulStop stops accepting and waits for in-flight calls.
func (s *Server) GracefulStop() { s.g.GracefulStop() }

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
			s.svc.Metrics.ObserveRequest(mi.GetModelName(), "grpc-v2", status.Code(err).String(), time.Since(start))
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
	m, f, err := s.svc.Model(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, err
	}
	md := infer.Metadata(m.Name, m.Version, f)
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

func (s *Server) ModelInfer(_ context.Context, r *inference.ModelInferRequest) (*inference.ModelInferResponse, error) {
	m, f, err := s.svc.Model(r.GetModelName(), r.GetModelVersion())
	if err != nil {
		return nil, err
	}
	req, err := decodeRequest(r, f.NumFeatures(), func(name string, shape []int64) (int, error) { return infer.FeatureShape(f, name, shape) })
	if err != nil {
		return nil, err
	}
	outs, err := s.svc.Infer(f, req)
	if err != nil {
		return nil, err
	}
	id := r.GetId()
	resp := &inference.ModelInferResponse{ModelName: m.Name, ModelVersion: m.Version, Id: id}
	// Raw output contents are used when the request sent raw inputs, as KServe's server does, so
	// a client gets back the encoding it sent.
	raw := len(r.GetRawInputContents()) > 0
	for _, o := range outs {
		t := &inference.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: o.Datatype, Shape: o.Shape}
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
	return &inference.InferTensorContents{Fp32Contents: o.Values}
}

// decodeRequest turns the single input tensor into rows, from typed contents or raw bytes.
func decodeRequest(r *inference.ModelInferRequest, nfeat int, checkShape func(string, []int64) (int, error)) (*infer.Request, error) {
	ins := r.GetInputs()
	switch len(ins) {
	case 0:
		return nil, v2.Errorf(v2.KindInvalidInput, "request has no inputs; want one input of shape [N, %d]", nfeat)
	case 1:
	default:
		return nil, v2.Errorf(v2.KindInvalidInput, "request has %d inputs; the model takes one input of shape [N, %d]", len(ins), nfeat)
	}
	in := ins[0]
	name := in.GetName()
	if in.GetDatatype() == "" {
		return nil, v2.Errorf(v2.KindInvalidInput, "input %s: no datatype", name)
	}
	want, err := v2.ElementCount(name, in.GetShape())
	if err != nil {
		return nil, err
	}
	nrows, err := checkShape(name, in.GetShape())
	if err != nil {
		return nil, err
	}
	req := &infer.Request{ID: r.GetId(), NRows: nrows, Rows: make([]float32, 0, want)}
	rawIn := r.GetRawInputContents()
	switch {
	case len(rawIn) > 0:
		if len(rawIn) != 1 {
			return nil, v2.Errorf(v2.KindInvalidInput, "raw_input_contents has %d entries for 1 input", len(rawIn))
		}
		if in.GetContents() != nil {
			return nil, v2.Errorf(v2.KindInvalidInput, "input %s: both contents and raw_input_contents given", name)
		}
		req.Rows, err = v2.DecodeBinaryData(req.Rows, name, in.GetDatatype(), rawIn[0], want)
	default:
		req.Rows, err = fromContents(req.Rows, name, in.GetDatatype(), in.GetContents(), want)
	}
	if err != nil {
		return nil, err
	}
	for _, o := range r.GetOutputs() {
		req.Outputs = append(req.Outputs, infer.OutputRequest{Name: o.GetName()})
	}
	return req, nil
}

// fromContents reads typed contents; the field used must match the datatype, as the spec says.
func fromContents(dst []float32, name, datatype string, c *inference.InferTensorContents, want int) ([]float32, error) {
	if c == nil {
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: no contents and no raw_input_contents", name)
	}
	var n int
	add := func(v float32) { dst = append(dst, v) }
	switch datatype {
	case "FP32":
		n = len(c.GetFp32Contents())
		if n == want {
			dst = append(dst, c.GetFp32Contents()...)
		}
	case "FP64":
		n = len(c.GetFp64Contents())
		if n == want {
			for _, v := range c.GetFp64Contents() {
				add(float32(v))
			}
		}
	case "INT8", "INT16", "INT32":
		n = len(c.GetIntContents())
		if n == want {
			for _, v := range c.GetIntContents() {
				add(float32(v))
			}
		}
	case "INT64":
		n = len(c.GetInt64Contents())
		if n == want {
			for _, v := range c.GetInt64Contents() {
				add(float32(v))
			}
		}
	case "UINT8", "UINT16", "UINT32":
		n = len(c.GetUintContents())
		if n == want {
			for _, v := range c.GetUintContents() {
				add(float32(v))
			}
		}
	case "UINT64":
		n = len(c.GetUint64Contents())
		if n == want {
			for _, v := range c.GetUint64Contents() {
				add(float32(v))
			}
		}
	case "BOOL":
		n = len(c.GetBoolContents())
		if n == want {
			for _, v := range c.GetBoolContents() {
				if v {
					add(1)
				} else {
					add(0)
				}
			}
		}
	case "BYTES":
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: datatype BYTES is not supported: the model takes numeric features", name)
	default:
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: unknown datatype %q", name, datatype)
	}
	if n != want {
		return dst, v2.Errorf(v2.KindInvalidInput, "input %s: shape declares %d elements, the %s contents hold %d", name, want, datatype, n)
	}
	return dst, nil
}
