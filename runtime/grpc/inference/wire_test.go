package inference

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// field is one field as KServe's grpc_predict_v2.proto declares it. typ is
// written as in a .proto file ("repeated bytes", "map<string, inference.X>",
// "inference.X" for a message).
type field struct {
	name   string
	number protowire.Number
	typ    string
}

const paramMap = "map<string, inference.InferParameter>"

// upstreamMessages is every message of the upstream file with every field,
// number and type. A clash with the generated descriptor means a client
// built from KServe's file would misread our bytes (or we theirs).
var upstreamMessages = map[protoreflect.FullName][]field{
	"inference.ServerLiveRequest":     {},
	"inference.ServerLiveResponse":    {{"live", 1, "bool"}},
	"inference.ServerReadyRequest":    {},
	"inference.ServerReadyResponse":   {{"ready", 1, "bool"}},
	"inference.ModelReadyRequest":     {{"name", 1, "string"}, {"version", 2, "string"}},
	"inference.ModelReadyResponse":    {{"ready", 1, "bool"}},
	"inference.ServerMetadataRequest": {},
	"inference.ServerMetadataResponse": {
		{"name", 1, "string"}, {"version", 2, "string"}, {"extensions", 3, "repeated string"},
	},
	"inference.ModelMetadataRequest": {{"name", 1, "string"}, {"version", 2, "string"}},
	"inference.ModelMetadataResponse": {
		{"name", 1, "string"},
		{"versions", 2, "repeated string"},
		{"platform", 3, "string"},
		{"inputs", 4, "repeated inference.ModelMetadataResponse.TensorMetadata"},
		{"outputs", 5, "repeated inference.ModelMetadataResponse.TensorMetadata"},
	},
	"inference.ModelMetadataResponse.TensorMetadata": {
		{"name", 1, "string"}, {"datatype", 2, "string"}, {"shape", 3, "repeated int64"},
	},
	"inference.ModelInferRequest": {
		{"model_name", 1, "string"},
		{"model_version", 2, "string"},
		{"id", 3, "string"},
		{"parameters", 4, paramMap},
		{"inputs", 5, "repeated inference.ModelInferRequest.InferInputTensor"},
		{"outputs", 6, "repeated inference.ModelInferRequest.InferRequestedOutputTensor"},
		{"raw_input_contents", 7, "repeated bytes"},
	},
	"inference.ModelInferRequest.InferInputTensor": {
		{"name", 1, "string"},
		{"datatype", 2, "string"},
		{"shape", 3, "repeated int64"},
		{"parameters", 4, paramMap},
		{"contents", 5, "inference.InferTensorContents"},
	},
	"inference.ModelInferRequest.InferRequestedOutputTensor": {
		{"name", 1, "string"}, {"parameters", 2, paramMap},
	},
	"inference.ModelInferResponse": {
		{"model_name", 1, "string"},
		{"model_version", 2, "string"},
		{"id", 3, "string"},
		{"parameters", 4, paramMap},
		{"outputs", 5, "repeated inference.ModelInferResponse.InferOutputTensor"},
		{"raw_output_contents", 6, "repeated bytes"},
	},
	"inference.ModelInferResponse.InferOutputTensor": {
		{"name", 1, "string"},
		{"datatype", 2, "string"},
		{"shape", 3, "repeated int64"},
		{"parameters", 4, paramMap},
		{"contents", 5, "inference.InferTensorContents"},
	},
	// 4 and 5 come from Triton's grpc_service.proto; KServe's file stops at 3.
	"inference.InferParameter": {
		{"bool_param", 1, "bool"},
		{"int64_param", 2, "int64"},
		{"string_param", 3, "string"},
		{"double_param", 4, "double"},
		{"uint64_param", 5, "uint64"},
	},
	"inference.InferTensorContents": {
		{"bool_contents", 1, "repeated bool"},
		{"int_contents", 2, "repeated int32"},
		{"int64_contents", 3, "repeated int64"},
		{"uint_contents", 4, "repeated uint32"},
		{"uint64_contents", 5, "repeated uint64"},
		{"fp32_contents", 6, "repeated float"},
		{"fp64_contents", 7, "repeated double"},
		{"bytes_contents", 8, "repeated bytes"},
	},
	"inference.RepositoryModelLoadRequest":    {{"model_name", 1, "string"}},
	"inference.RepositoryModelLoadResponse":   {{"model_name", 1, "string"}, {"isLoaded", 2, "bool"}},
	"inference.RepositoryModelUnloadRequest":  {{"model_name", 1, "string"}},
	"inference.RepositoryModelUnloadResponse": {{"model_name", 1, "string"}, {"isUnloaded", 2, "bool"}},
}

// fieldType renders a field descriptor in .proto syntax, the form used in
// upstreamMessages.
func fieldType(fd protoreflect.FieldDescriptor) string {
	scalar := func(fd protoreflect.FieldDescriptor) string {
		switch fd.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			return string(fd.Message().FullName())
		case protoreflect.EnumKind:
			return string(fd.Enum().FullName())
		default:
			return fd.Kind().String()
		}
	}
	switch {
	case fd.IsMap():
		return "map<" + scalar(fd.MapKey()) + ", " + scalar(fd.MapValue()) + ">"
	case fd.IsList():
		return "repeated " + scalar(fd)
	default:
		return scalar(fd)
	}
}

// allMessages lists the file's messages, nested ones included, leaving out
// the synthetic entry messages protoc makes for map fields.
func allMessages(mds protoreflect.MessageDescriptors, out map[protoreflect.FullName]protoreflect.MessageDescriptor) {
	for i := 0; i < mds.Len(); i++ {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue
		}
		out[md.FullName()] = md
		allMessages(md.Messages(), out)
	}
}

func TestMessagesMatchUpstream(t *testing.T) {
	fd := File_grpc_predict_v2_proto
	if got := fd.Package(); got != "inference" {
		t.Fatalf("grpc_predict_v2.proto: package %q, want %q", got, "inference")
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Fatalf("grpc_predict_v2.proto: syntax %v, want proto3", got)
	}

	generated := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	allMessages(fd.Messages(), generated)
	for name := range generated {
		if _, ok := upstreamMessages[name]; !ok {
			t.Errorf("grpc_predict_v2.proto: message %s is not in the upstream file", name)
		}
	}

	for name, want := range upstreamMessages {
		t.Run(string(name), func(t *testing.T) {
			md, ok := generated[name]
			if !ok {
				t.Fatalf("message %s: missing from grpc_predict_v2.proto", name)
			}
			fields := md.Fields()
			if fields.Len() != len(want) {
				t.Errorf("message %s: %d fields, want %d", name, fields.Len(), len(want))
			}
			for _, w := range want {
				got := fields.ByName(protoreflect.Name(w.name))
				if got == nil {
					t.Errorf("message %s: field %s missing", name, w.name)
					continue
				}
				if got.Number() != w.number {
					t.Errorf("message %s: field %s has number %d, want %d", name, w.name, got.Number(), w.number)
				}
				if typ := fieldType(got); typ != w.typ {
					t.Errorf("message %s: field %s has type %q, want %q", name, w.name, typ, w.typ)
				}
			}
		})
	}
}

func TestInferParameterOneof(t *testing.T) {
	md := (&InferParameter{}).ProtoReflect().Descriptor()
	oneofs := md.Oneofs()
	if oneofs.Len() != 1 || oneofs.Get(0).Name() != "parameter_choice" {
		t.Fatalf("InferParameter: want exactly one oneof parameter_choice, got %d", oneofs.Len())
	}
	od := oneofs.Get(0)
	if od.Fields().Len() != md.Fields().Len() {
		t.Errorf("InferParameter: %d of %d fields inside parameter_choice, want all", od.Fields().Len(), md.Fields().Len())
	}
}

func TestServiceMatchesUpstream(t *testing.T) {
	sd := File_grpc_predict_v2_proto.Services().ByName("GRPCInferenceService")
	if sd == nil {
		t.Fatal("grpc_predict_v2.proto: service GRPCInferenceService missing")
	}
	if sd.FullName() != "inference.GRPCInferenceService" {
		t.Fatalf("service full name %s, want inference.GRPCInferenceService", sd.FullName())
	}
	tests := []struct {
		method, in, out, fullMethod string
	}{
		{"ServerLive", "ServerLiveRequest", "ServerLiveResponse", GRPCInferenceService_ServerLive_FullMethodName},
		{"ServerReady", "ServerReadyRequest", "ServerReadyResponse", GRPCInferenceService_ServerReady_FullMethodName},
		{"ModelReady", "ModelReadyRequest", "ModelReadyResponse", GRPCInferenceService_ModelReady_FullMethodName},
		{"ServerMetadata", "ServerMetadataRequest", "ServerMetadataResponse", GRPCInferenceService_ServerMetadata_FullMethodName},
		{"ModelMetadata", "ModelMetadataRequest", "ModelMetadataResponse", GRPCInferenceService_ModelMetadata_FullMethodName},
		{"ModelInfer", "ModelInferRequest", "ModelInferResponse", GRPCInferenceService_ModelInfer_FullMethodName},
		{"RepositoryModelLoad", "RepositoryModelLoadRequest", "RepositoryModelLoadResponse", GRPCInferenceService_RepositoryModelLoad_FullMethodName},
		{"RepositoryModelUnload", "RepositoryModelUnloadRequest", "RepositoryModelUnloadResponse", GRPCInferenceService_RepositoryModelUnload_FullMethodName},
	}
	if got := sd.Methods().Len(); got != len(tests) {
		t.Errorf("service GRPCInferenceService: %d methods, want %d", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			m := sd.Methods().ByName(protoreflect.Name(tt.method))
			if m == nil {
				t.Fatalf("method %s missing", tt.method)
			}
			if got := string(m.Input().Name()); got != tt.in {
				t.Errorf("method %s: input %s, want %s", tt.method, got, tt.in)
			}
			if got := string(m.Output().Name()); got != tt.out {
				t.Errorf("method %s: output %s, want %s", tt.method, got, tt.out)
			}
			if m.IsStreamingClient() || m.IsStreamingServer() {
				t.Errorf("method %s: streaming, want unary", tt.method)
			}
			// The HTTP/2 path clients put on the wire.
			if want := "/inference.GRPCInferenceService/" + tt.method; tt.fullMethod != want {
				t.Errorf("method %s: full method %q, want %q", tt.method, tt.fullMethod, want)
			}
		})
	}
}

// fp32LE lays out float32 values as the raw tensor format wants them:
// row-major, little-endian, no padding.
func fp32LE(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// upstreamInferRequestBytes encodes, field by field with protowire, the
// request a client generated from KServe's file sends for one 1x4 FP32
// input in raw form. It is written without the generated code so that a
// renumbered field fails the comparison.
func upstreamInferRequestBytes(raw []byte) []byte {
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 1, protowire.BytesType)
	tensor = protowire.AppendString(tensor, "input-0")
	tensor = protowire.AppendTag(tensor, 2, protowire.BytesType)
	tensor = protowire.AppendString(tensor, "FP32")
	var shape []byte // proto3 packs repeated scalars
	shape = protowire.AppendVarint(shape, 1)
	shape = protowire.AppendVarint(shape, 4)
	tensor = protowire.AppendTag(tensor, 3, protowire.BytesType)
	tensor = protowire.AppendBytes(tensor, shape)

	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendString(out, "iris")
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	out = protowire.AppendString(out, "req-1")
	out = protowire.AppendTag(out, 5, protowire.BytesType)
	out = protowire.AppendBytes(out, tensor)
	out = protowire.AppendTag(out, 7, protowire.BytesType)
	out = protowire.AppendBytes(out, raw)
	return out
}

func TestModelInferRequestWireBytes(t *testing.T) {
	raw := fp32LE(5.1, 3.5, 1.4, 0.2)
	wire := upstreamInferRequestBytes(raw)

	req := &ModelInferRequest{}
	if err := proto.Unmarshal(wire, req); err != nil {
		t.Fatalf("unmarshal upstream ModelInferRequest bytes: %v", err)
	}
	if len(req.ProtoReflect().GetUnknown()) != 0 {
		t.Errorf("upstream bytes left unknown fields %x: a field number differs", req.ProtoReflect().GetUnknown())
	}
	if req.GetModelName() != "iris" || req.GetId() != "req-1" {
		t.Errorf("model_name %q id %q, want iris req-1", req.GetModelName(), req.GetId())
	}
	if n := len(req.GetInputs()); n != 1 {
		t.Fatalf("inputs: %d, want 1", n)
	}
	in := req.GetInputs()[0]
	if in.GetName() != "input-0" || in.GetDatatype() != "FP32" || len(in.GetShape()) != 2 || in.GetShape()[0] != 1 || in.GetShape()[1] != 4 {
		t.Errorf("input: name %q datatype %q shape %v, want input-0 FP32 [1 4]", in.GetName(), in.GetDatatype(), in.GetShape())
	}
	if got := req.GetRawInputContents(); len(got) != 1 || string(got[0]) != string(raw) {
		t.Errorf("raw_input_contents %x, want [%x]", got, raw)
	}

	// Our encoder must produce the same bytes, so upstream decoders read us too.
	ours, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		t.Fatalf("marshal ModelInferRequest: %v", err)
	}
	if string(ours) != string(wire) {
		t.Errorf("marshal ModelInferRequest:\n got %x\nwant %x", ours, wire)
	}
}

func TestRoundTrip(t *testing.T) {
	raw := fp32LE(6.7, 3.0, 5.2, 2.3, 4.9, 2.5, 4.5, 1.7)
	tests := []struct {
		name string
		msg  proto.Message
	}{
		{"ModelInferRequest raw", &ModelInferRequest{
			ModelName:    "iris",
			ModelVersion: "1",
			Id:           "req-7",
			Parameters: map[string]*InferParameter{
				"binary_data_output": {ParameterChoice: &InferParameter_BoolParam{BoolParam: true}},
				"batch":              {ParameterChoice: &InferParameter_Int64Param{Int64Param: -2}},
				"note":               {ParameterChoice: &InferParameter_StringParam{StringParam: "x"}},
				"scale":              {ParameterChoice: &InferParameter_DoubleParam{DoubleParam: 0.5}},
				"big":                {ParameterChoice: &InferParameter_Uint64Param{Uint64Param: math.MaxUint64}},
			},
			Inputs: []*ModelInferRequest_InferInputTensor{
				{Name: "input-0", Datatype: "FP32", Shape: []int64{2, 4}},
			},
			Outputs: []*ModelInferRequest_InferRequestedOutputTensor{
				{Name: "predict_proba"},
				{Name: "output-0", Parameters: map[string]*InferParameter{
					"binary_data": {ParameterChoice: &InferParameter_BoolParam{BoolParam: false}},
				}},
			},
			RawInputContents: [][]byte{raw, {}},
		}},
		{"ModelInferRequest typed contents", &ModelInferRequest{
			ModelName: "iris",
			Inputs: []*ModelInferRequest_InferInputTensor{{
				Name: "input-0", Datatype: "FP64", Shape: []int64{1, 2},
				Contents: &InferTensorContents{Fp64Contents: []float64{1.5, math.Inf(-1)}},
			}},
		}},
		{"ModelInferResponse raw", &ModelInferResponse{
			ModelName: "iris",
			Id:        "req-7",
			Outputs: []*ModelInferResponse_InferOutputTensor{
				{Name: "output-0", Datatype: "FP32", Shape: []int64{2}},
			},
			RawOutputContents: [][]byte{fp32LE(2, 1)},
		}},
		{"ModelMetadataResponse", &ModelMetadataResponse{
			Name: "iris", Versions: []string{"1"}, Platform: "xgboost",
			Inputs:  []*ModelMetadataResponse_TensorMetadata{{Name: "input-0", Datatype: "FP32", Shape: []int64{-1, 4}}},
			Outputs: []*ModelMetadataResponse_TensorMetadata{{Name: "output-0", Datatype: "FP32", Shape: []int64{-1}}},
		}},
		{"RepositoryModelLoadResponse", &RepositoryModelLoadResponse{ModelName: "iris", IsLoaded: true}},
		{"RepositoryModelUnloadResponse", &RepositoryModelUnloadResponse{ModelName: "iris", IsUnloaded: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(tt.msg)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got := tt.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if !proto.Equal(got, tt.msg) {
				t.Errorf("round trip changed the message:\n got %v\nwant %v", got, tt.msg)
			}
		})
	}
}

// echoServer answers ModelInfer by returning the raw input as raw output;
// every other method stays unimplemented.
type echoServer struct {
	UnimplementedGRPCInferenceServiceServer
}

func (echoServer) ModelInfer(_ context.Context, req *ModelInferRequest) (*ModelInferResponse, error) {
	resp := &ModelInferResponse{ModelName: req.GetModelName(), Id: req.GetId()}
	for i, in := range req.GetInputs() {
		resp.Outputs = append(resp.Outputs, &ModelInferResponse_InferOutputTensor{
			Name: "output-" + in.GetName(), Datatype: in.GetDatatype(), Shape: in.GetShape(),
		})
		resp.RawOutputContents = append(resp.RawOutputContents, req.GetRawInputContents()[i])
	}
	return resp, nil
}

// TestGRPCRoundTrip sends raw tensor bytes through a real gRPC server on the
// loopback interface, through the generated client and server stubs.
func TestGRPCRoundTrip(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1: %v", err)
	}
	srv := grpc.NewServer()
	RegisterGRPCInferenceServiceServer(srv, echoServer{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", lis.Addr(), err)
	}
	t.Cleanup(func() { conn.Close() })
	client := NewGRPCInferenceServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard for an in-process call
	defer cancel()

	raw := fp32LE(5.9, 3.0, 5.1, 1.8)
	resp, err := client.ModelInfer(ctx, &ModelInferRequest{
		ModelName:        "iris",
		Id:               "grpc-1",
		Inputs:           []*ModelInferRequest_InferInputTensor{{Name: "input-0", Datatype: "FP32", Shape: []int64{1, 4}}},
		RawInputContents: [][]byte{raw},
	})
	if err != nil {
		t.Fatalf("ModelInfer: %v", err)
	}
	if resp.GetModelName() != "iris" || resp.GetId() != "grpc-1" {
		t.Errorf("ModelInfer: model_name %q id %q, want iris grpc-1", resp.GetModelName(), resp.GetId())
	}
	if got := resp.GetRawOutputContents(); len(got) != 1 || string(got[0]) != string(raw) {
		t.Errorf("ModelInfer: raw_output_contents %x, want [%x]", got, raw)
	}

	// An unimplemented method must reach the server under its upstream path
	// and come back as Unimplemented naming that method.
	_, err = client.ServerLive(ctx, &ServerLiveRequest{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "ServerLive") {
		t.Errorf("ServerLive on an unimplemented server: err %v, want Unimplemented naming ServerLive", err)
	}
}
