package grpcserver

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// grpc-go answers every request it cannot unmarshal with INTERNAL ("grpc: error unmarshalling
// request"), before any interceptor runs, although the client sent the bad bytes. The V2
// protocol's status table says INVALID_ARGUMENT for a malformed request, so the server's codec
// does not fail: it records the parse error against the message it was decoding, and the
// interceptors, which receive that same message, answer INVALID_ARGUMENT.

// badMessages maps a message that failed to unmarshal to its error, until an interceptor
// takes it out.
var badMessages sync.Map

// lenientCodec is the proto codec with unmarshal errors deferred to the interceptors.
type lenientCodec struct{ encoding.CodecV2 }

func newLenientCodec() lenientCodec { return lenientCodec{encoding.GetCodecV2("proto")} }

func (c lenientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		badMessages.Store(v, err)
	}
	return nil
}

// malformed returns INVALID_ARGUMENT if msg failed to unmarshal.
func malformed(msg any) error {
	if err, ok := badMessages.LoadAndDelete(msg); ok {
		return status.Errorf(codes.InvalidArgument, "malformed request message: %v", err)
	}
	return nil
}

// rejectMalformedStream checks every message a streaming handler receives.
func rejectMalformedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, checkedStream{ss})
}

type checkedStream struct{ grpc.ServerStream }

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return malformed(m)
}

// rejectMalformedUnary answers INVALID_ARGUMENT for a request that failed to unmarshal.
func rejectMalformedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := malformed(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}
