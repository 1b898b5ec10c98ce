// Command grpcfloor is the gRPC floor of the load test: a bare grpc-go server whose ModelInfer
// answers every call with a fixed response of the size gangboost-runtime returns for one Iris
// row, so the load test can tell what gRPC itself costs from what the runtime adds.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	"google.golang.org/grpc"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

// response is what gangboost-runtime answers for one Iris row (same fields, same values).
var response = &inference.ModelInferResponse{
	ModelName: "iris",
	Outputs: []*inference.ModelInferResponse_InferOutputTensor{{
		Name: "output-0", Datatype: "FP32", Shape: []int64{1, 3},
		Contents: &inference.InferTensorContents{Fp32Contents: []float32{0.98885334, 0.0071750334, 0.0039716284}},
	}},
}

type floor struct {
	inference.UnimplementedGRPCInferenceServiceServer
}

func (floor) ServerReady(context.Context, *inference.ServerReadyRequest) (*inference.ServerReadyResponse, error) {
	return &inference.ServerReadyResponse{Ready: true}, nil
}

// ModelInfer answers with the fixed response; the request is decoded by grpc-go as any server's is.
func (floor) ModelInfer(context.Context, *inference.ModelInferRequest) (*inference.ModelInferResponse, error) {
	return response, nil
}

func main() {
	port := flag.Int("port", 8091, "port to listen on (127.0.0.1)")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcfloor:", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	inference.RegisterGRPCInferenceServiceServer(s, floor{})
	if err := s.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "grpcfloor:", err)
		os.Exit(1)
	}
}
