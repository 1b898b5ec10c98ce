package protocoltest

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

func grpcClient(t *testing.T, s *server) inference.GRPCInferenceServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return inference.NewGRPCInferenceServiceClient(conn)
}

func TestGRPCEveryMethod(t *testing.T) {
	s := startIris(t)
	c := grpcClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	if r, err := c.ServerLive(ctx, &inference.ServerLiveRequest{}); err != nil || !r.Live {
		t.Fatalf("ServerLive = %v, %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &inference.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Fatalf("ServerReady = %v, %v", r, err)
	}
	if r, err := c.ModelReady(ctx, &inference.ModelReadyRequest{Name: "iris", Version: "1"}); err != nil || !r.Ready {
		t.Fatalf("ModelReady = %v, %v", r, err)
	}
	if r, err := c.ServerMetadata(ctx, &inference.ServerMetadataRequest{}); err != nil || r.Name != "gangboost" {
		t.Fatalf("ServerMetadata = %v, %v", r, err)
	}
	md, err := c.ModelMetadata(ctx, &inference.ModelMetadataRequest{Name: "iris"})
	if err != nil || md.Platform != "xgboost" || md.Inputs[0].Shape[1] != 4 || md.Outputs[0].Name != "output-0" {
		t.Fatalf("ModelMetadata = %v, %v", md, err)
	}

	want := expectedProba(t, irisRows)
	// Typed contents.
	resp, err := c.ModelInfer(ctx, &inference.ModelInferRequest{
		ModelName: "iris", Id: "g1",
		Inputs: []*inference.ModelInferRequest_InferInputTensor{{Name: "input-0", Datatype: "FP32", Shape: []int64{2, 4},
			Contents: &inference.InferTensorContents{Fp32Contents: irisRows}}},
		Outputs: []*inference.ModelInferRequest_InferRequestedOutputTensor{{Name: "output-0"}, {Name: "predict"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Id != "g1" || resp.ModelName != "iris" || len(resp.Outputs) != 2 {
		t.Fatalf("ModelInfer response %v", resp)
	}
	assertClose(t, "grpc contents", resp.Outputs[0].Contents.Fp32Contents, want)
	if got := resp.Outputs[1].Contents.Int64Contents; len(got) != 2 || resp.Outputs[1].Datatype != "INT64" {
		t.Fatalf("predict output %v", resp.Outputs[1])
	}

	// raw_input_contents in, raw_output_contents out, as KServe's gRPC client sends by default.
	var raw []byte
	for _, v := range irisRows {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	resp, err = c.ModelInfer(ctx, &inference.ModelInferRequest{
		ModelName: "iris", ModelVersion: "1",
		Inputs:           []*inference.ModelInferRequest_InferInputTensor{{Name: "input-0", Datatype: "FP32", Shape: []int64{2, 4}}},
		RawInputContents: [][]byte{raw},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.RawOutputContents) != 1 || len(resp.RawOutputContents[0]) != 24 {
		t.Fatalf("raw outputs %v", resp.RawOutputContents)
	}
	got := make([]float32, 6)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(resp.RawOutputContents[0][4*i:]))
	}
	assertClose(t, "grpc raw", got, want)

	if _, err := c.RepositoryModelUnload(ctx, &inference.RepositoryModelUnloadRequest{ModelName: "iris"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.ModelReady(ctx, &inference.ModelReadyRequest{Name: "iris"}); r.Ready {
		t.Fatal("ready after unload")
	}
	if r, err := c.RepositoryModelLoad(ctx, &inference.RepositoryModelLoadRequest{ModelName: "iris"}); err != nil || !r.IsLoaded {
		t.Fatalf("load = %v, %v", r, err)
	}
}

func TestGRPCErrorCodes(t *testing.T) {
	s := startIris(t)
	c := grpcClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	in := func(dt string, shape []int64, contents *inference.InferTensorContents) []*inference.ModelInferRequest_InferInputTensor {
		return []*inference.ModelInferRequest_InferInputTensor{{Name: "input-0", Datatype: dt, Shape: shape, Contents: contents}}
	}
	cases := []struct {
		name string
		req  *inference.ModelInferRequest
		code codes.Code
	}{
		{"unknown model", &inference.ModelInferRequest{ModelName: "nope", Inputs: in("FP32", []int64{1, 4}, &inference.InferTensorContents{Fp32Contents: irisRows[:4]})}, codes.NotFound},
		{"version mismatch", &inference.ModelInferRequest{ModelName: "iris", ModelVersion: "9", Inputs: in("FP32", []int64{1, 4}, &inference.InferTensorContents{Fp32Contents: irisRows[:4]})}, codes.NotFound},
		{"no inputs", &inference.ModelInferRequest{ModelName: "iris"}, codes.InvalidArgument},
		{"feature mismatch", &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP32", []int64{1, 3}, &inference.InferTensorContents{Fp32Contents: irisRows[:3]})}, codes.InvalidArgument},
		{"contents of the wrong type", &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP64", []int64{1, 4}, &inference.InferTensorContents{Fp32Contents: irisRows[:4]})}, codes.InvalidArgument},
		{"no contents", &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP32", []int64{1, 4}, nil)}, codes.InvalidArgument},
		{"raw too short", &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP32", []int64{1, 4}, nil), RawInputContents: [][]byte{make([]byte, 12)}}, codes.InvalidArgument},
		{"unknown output", &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP32", []int64{1, 4}, &inference.InferTensorContents{Fp32Contents: irisRows[:4]}),
			Outputs: []*inference.ModelInferRequest_InferRequestedOutputTensor{{Name: "nope"}}}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		_, err := c.ModelInfer(ctx, tc.req)
		if status.Code(err) != tc.code || status.Convert(err).Message() == "" {
			t.Errorf("%s: %v, want code %v with a message", tc.name, err, tc.code)
		}
	}
	if _, err := c.RepositoryModelUnload(ctx, &inference.RepositoryModelUnloadRequest{ModelName: "iris"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.ModelInfer(ctx, &inference.ModelInferRequest{ModelName: "iris", Inputs: in("FP32", []int64{1, 4}, &inference.InferTensorContents{Fp32Contents: irisRows[:4]})})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("infer on an unloaded model: %v, want Unavailable", err)
	}
}
