// Package inference holds the Go messages and gRPC stubs of the V2 / Open
// Inference Protocol (service inference.GRPCInferenceService), generated from
// grpc_predict_v2.proto, which is wire-compatible with KServe's file of the
// same name. Regenerate with scripts/gen-proto.sh; never edit the .pb.go files.
package inference
