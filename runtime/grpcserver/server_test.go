package grpcserver_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/grpc/inference"
	"github.com/gangboost/gangboost/runtime/grpcserver"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/service"
)

// irisRows are two iris flowers, a setosa and a virginica.
var irisRows = []float32{5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3}

// served is a gRPC server over the runtime's model fixture (iris, binary), reached by a real
// client through an in-memory connection.
type served struct {
	svc    *service.Service
	conn   *grpc.ClientConn
	client inference.GRPCInferenceServiceClient
	health healthpb.HealthClient
	log    *bytes.Buffer
}

func serve(t *testing.T) *served {
	t.Helper()
	m := metrics.New()
	r, err := registry.Open("../testdata/models", "unused", "", registry.Options{NewPredictor: service.NewPredictor(m, batcher.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	svc := &service.Service{Registry: r, Metrics: m}
	var log bytes.Buffer
	s := grpcserver.New(svc, grpcserver.Options{}, slog.New(slog.NewTextHandler(&log, nil)))
	ln := bufconn.Listen(1 << 20)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///runtime",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &served{svc: svc, conn: conn, client: inference.NewGRPCInferenceServiceClient(conn), health: healthpb.NewHealthClient(conn), log: &log}
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// predict is what the iris evaluator computes for rows, the answer the server must give.
func predict(t *testing.T, s *served, rows []float32, kind forest.OutputKind) []float32 {
	t.Helper()
	_, l, err := s.svc.Acquire("iris", "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	want, err := l.Forest.Predict(nil, rows, len(rows)/4, kind)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func TestServerAndModelMetadata(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	if r, err := s.client.ServerLive(ctx, &inference.ServerLiveRequest{}); err != nil || !r.Live {
		t.Fatalf("ServerLive: %v %v", r, err)
	}
	if r, err := s.client.ServerReady(ctx, &inference.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Fatalf("ServerReady: %v %v", r, err)
	}
	if r, err := s.client.ModelReady(ctx, &inference.ModelReadyRequest{Name: "iris"}); err != nil || !r.Ready {
		t.Fatalf("ModelReady: %v %v", r, err)
	}
	sm, err := s.client.ServerMetadata(ctx, &inference.ServerMetadataRequest{})
	if err != nil || sm.Name != service.Name || sm.Version != service.Version || !slices.Equal(sm.Extensions, service.Extensions) {
		t.Fatalf("ServerMetadata: %v %v", sm, err)
	}
	md, err := s.client.ModelMetadata(ctx, &inference.ModelMetadataRequest{Name: "iris"})
	if err != nil {
		t.Fatal(err)
	}
	if md.Name != "iris" || md.Platform != "xgboost" || len(md.Inputs) != 1 ||
		md.Inputs[0].Name != infer.InputName || !slices.Equal(md.Inputs[0].Shape, []int64{-1, 4}) {
		t.Fatalf("iris metadata %v", md)
	}
	shapes := map[string][]int64{}
	for _, o := range md.Outputs {
		shapes[o.Name] = o.Shape
	}
	if !slices.Equal(shapes[infer.OutputProba], []int64{-1, 3}) || !slices.Equal(shapes[infer.OutputPredict], []int64{-1}) {
		t.Fatalf("iris outputs %v", shapes)
	}
}

// TestModelInfer: typed contents of each numeric datatype and raw_input_contents give the
// evaluator's values; raw inputs get raw outputs back, as KServe's server answers.
func TestModelInfer(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	wantProba := predict(t, s, irisRows, forest.OutputProba)
	outputs := []*inference.ModelInferRequest_InferRequestedOutputTensor{{Name: infer.OutputProba}, {Name: infer.OutputPredict}}
	input := func(datatype string, c *inference.InferTensorContents) []*inference.ModelInferRequest_InferInputTensor {
		return []*inference.ModelInferRequest_InferInputTensor{{Name: infer.InputName, Datatype: datatype, Shape: []int64{2, 4}, Contents: c}}
	}
	fp64 := make([]float64, len(irisRows))
	for i, v := range irisRows {
		fp64[i] = float64(v)
	}
	for _, tc := range []struct {
		name     string
		datatype string
		contents *inference.InferTensorContents
	}{
		{"FP32", "FP32", &inference.InferTensorContents{Fp32Contents: irisRows}},
		{"FP64", "FP64", &inference.InferTensorContents{Fp64Contents: fp64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.client.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Id: "7", Inputs: input(tc.datatype, tc.contents), Outputs: outputs})
			if err != nil {
				t.Fatal(err)
			}
			if r.ModelName != "iris" || r.Id != "7" || len(r.Outputs) != 2 || len(r.RawOutputContents) != 0 {
				t.Fatalf("answer %v", r)
			}
			proba, label := r.Outputs[0], r.Outputs[1]
			if proba.Datatype != "FP32" || !slices.Equal(proba.Shape, []int64{2, 3}) || !slices.Equal(proba.Contents.GetFp32Contents(), wantProba) {
				t.Errorf("predict_proba %v, want %v", proba, wantProba)
			}
			if label.Datatype != "INT64" || !slices.Equal(label.Contents.GetInt64Contents(), []int64{0, 2}) {
				t.Errorf("predict %v, want INT64 [0 2]", label)
			}
		})
	}

	t.Run("raw", func(t *testing.T) {
		var raw []byte
		for _, v := range irisRows {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
		in := input("FP32", nil)
		r, err := s.client.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Inputs: in, Outputs: outputs, RawInputContents: [][]byte{raw}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.RawOutputContents) != 2 || r.Outputs[0].Contents != nil {
			t.Fatalf("raw request answered with %d raw outputs and contents %v", len(r.RawOutputContents), r.Outputs[0].Contents)
		}
		var gotProba []float32
		for b := r.RawOutputContents[0]; len(b) >= 4; b = b[4:] {
			gotProba = append(gotProba, math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		if !slices.Equal(gotProba, wantProba) {
			t.Errorf("raw predict_proba %v, want %v", gotProba, wantProba)
		}
		if b := r.RawOutputContents[1]; len(b) != 16 || binary.LittleEndian.Uint64(b) != 0 || binary.LittleEndian.Uint64(b[8:]) != 2 {
			t.Errorf("raw predict % x, want INT64 0 and 2", b)
		}
	})
}

// TestErrorsMapToStatus: each refusal gets the code the V2 status table gives its kind, with the
// message that says what to fix.
func TestErrorsMapToStatus(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	row := []*inference.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 4},
		Contents: &inference.InferTensorContents{Fp32Contents: irisRows[:4]}}}
	for _, tc := range []struct {
		name string
		req  *inference.ModelInferRequest
		code codes.Code
		msg  string
	}{
		{"unknown model", &inference.ModelInferRequest{ModelName: "nope", Inputs: row}, codes.NotFound, "model nope not found; this server has [binary iris]"},
		{"unknown version", &inference.ModelInferRequest{ModelName: "iris", ModelVersion: "2", Inputs: row}, codes.NotFound, "model iris version 2 not found: the model is not versioned"},
		{"contents short of the shape", &inference.ModelInferRequest{ModelName: "iris", Inputs: []*inference.ModelInferRequest_InferInputTensor{{
			Name: "x", Datatype: "FP32", Shape: []int64{2, 4}, Contents: &inference.InferTensorContents{Fp32Contents: irisRows[:4]}}}},
			codes.InvalidArgument, "input x: shape declares 8 elements, the FP32 contents hold 4"},
		{"contents of another datatype", &inference.ModelInferRequest{ModelName: "iris", Inputs: []*inference.ModelInferRequest_InferInputTensor{{
			Name: "x", Datatype: "INT32", Shape: []int64{1, 4}, Contents: &inference.InferTensorContents{Fp32Contents: irisRows[:4]}}}},
			codes.InvalidArgument, "input x: shape declares 4 elements, the INT32 contents hold 0"},
		{"BYTES", &inference.ModelInferRequest{ModelName: "iris", Inputs: []*inference.ModelInferRequest_InferInputTensor{{
			Name: "x", Datatype: "BYTES", Shape: []int64{1, 4}, Contents: &inference.InferTensorContents{BytesContents: [][]byte{{1}, {2}, {3}, {4}}}}}},
			codes.InvalidArgument, "input x: datatype BYTES is not supported"},
		{"raw entries and inputs differ", &inference.ModelInferRequest{ModelName: "iris", Inputs: row, RawInputContents: [][]byte{{1}, {2}}},
			codes.InvalidArgument, "raw_input_contents has 2 entries for 1 inputs"},
		{"contents and raw", &inference.ModelInferRequest{ModelName: "iris", Inputs: row, RawInputContents: [][]byte{make([]byte, 16)}},
			codes.InvalidArgument, "input x: both contents and raw_input_contents given"},
		{"unknown output", &inference.ModelInferRequest{ModelName: "iris", Inputs: row,
			Outputs: []*inference.ModelInferRequest_InferRequestedOutputTensor{{Name: "probabilities"}}}, codes.InvalidArgument, "probabilities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.client.ModelInfer(ctx, tc.req)
			if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Fatalf("%v; want %v containing %q", err, tc.code, tc.msg)
			}
		})
	}
	if _, err := s.client.RepositoryModelUnload(ctx, &inference.RepositoryModelUnloadRequest{ModelName: "binary"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.client.ModelMetadata(ctx, &inference.ModelMetadataRequest{Name: "binary"})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "model binary is unloaded") {
		t.Fatalf("metadata of an unloaded model: %v; want UNAVAILABLE saying it is unloaded", err)
	}
	if _, err := s.client.RepositoryModelLoad(ctx, &inference.RepositoryModelLoadRequest{ModelName: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("load of an unknown model: %v; want NOT_FOUND", err)
	}
}

// rawCodec sends bytes as they are, to put a malformed message on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestMalformedMessageIsInvalidArgument: grpc-go would answer INTERNAL for bytes it cannot
// unmarshal; the lenient codec and the interceptors make it INVALID_ARGUMENT, for unary and
// streaming methods, and the connection stays usable.
func TestMalformedMessageIsInvalidArgument(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	malformed := []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f} // field 1, a length running past the end
	for _, method := range []string{"/inference.GRPCInferenceService/ModelInfer", "/inference.GRPCInferenceService/ModelMetadata", "/grpc.health.v1.Health/Check"} {
		req, resp := malformed, []byte(nil)
		err := s.conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed request message") {
			t.Errorf("%s: %v; want INVALID_ARGUMENT", method, err)
		}
	}
	stream, err := s.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/grpc.health.v1.Health/Watch", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	req := malformed
	if err := stream.SendMsg(&req); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	var resp []byte
	if err := stream.RecvMsg(&resp); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Watch with a malformed message: %v; want INVALID_ARGUMENT", err)
	}
	if r, err := s.client.ServerLive(ctx, &inference.ServerLiveRequest{}); err != nil || !r.Live {
		t.Fatalf("ServerLive after malformed calls: %v %v", r, err)
	}
}

// TestHealth: the server and the inference service are SERVING while every model is ready, as
// /v2/health/ready; the health service itself always (the process is live).
func TestHealth(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("Check(%q): %v", service, err)
		}
		return r.Status
	}
	const inferenceService = "inference.GRPCInferenceService"
	for _, svc := range []string{"", inferenceService, "grpc.health.v1.Health"} {
		if st := check(svc); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v while every model is ready", svc, st)
		}
	}
	_, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	if st := status.Convert(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), inferenceService) {
		t.Errorf("Check of an unknown service: %v; want NOT_FOUND naming the services", err)
	}

	watch, err := s.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch status: %v %v", r, err)
	}
	if _, err := s.client.RepositoryModelUnload(ctx, &inference.RepositoryModelUnloadRequest{ModelName: "iris"}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"", inferenceService} {
		if st := check(svc); st != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Check(%q) = %v with iris unloaded", svc, st)
		}
	}
	if st := check("grpc.health.v1.Health"); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("the health service itself is %v with a model unloaded", st)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch after the unload: %v %v; want NOT_SERVING", r, err)
	}
	if r, err := s.client.RepositoryModelLoad(ctx, &inference.RepositoryModelLoadRequest{ModelName: "iris"}); err != nil || !r.IsLoaded {
		t.Fatalf("load: %v %v", r, err)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch after the load: %v %v; want SERVING", r, err)
	}
	sw, err := s.health.Watch(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sw.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
		t.Fatalf("Watch of an unknown service: %v %v; want SERVICE_UNKNOWN", r, err)
	}
}

// TestRequestsAreCountedAndLogged: every ModelInfer is counted under its model (or "" for a
// name the server does not have) and its gRPC code; failures are logged with the method.
func TestRequestsAreCountedAndLogged(t *testing.T) {
	s := serve(t)
	ctx := callCtx(t)
	in := []*inference.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 4},
		Contents: &inference.InferTensorContents{Fp32Contents: irisRows[:4]}}}
	for range 2 {
		if _, err := s.client.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Inputs: in}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.client.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "some-unknown-name", Inputs: in}); status.Code(err) != codes.NotFound {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.svc.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`gangboost_requests_total{model="iris",protocol="grpc-v2",status="OK"} 2`,
		`gangboost_requests_total{model="",protocol="grpc-v2",status="NotFound"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(rec.Body.String(), "some-unknown-name") {
		t.Error("an unknown model name became a metric label")
	}
	if log := s.log.String(); !strings.Contains(log, "method=/inference.GRPCInferenceService/ModelInfer code=NotFound") {
		t.Errorf("failed call not logged with its method and code: %s", log)
	}
}
