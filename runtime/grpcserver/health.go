package grpcserver

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

// health is grpc.health.v1.Health, what Kubernetes' gRPC probes and grpc-health-probe call. The
// server ("") and inference.GRPCInferenceService are SERVING when every model is ready, as
// /v2/health/ready; grpc.health.v1.Health itself always SERVING (the process is live).
type health struct {
	healthpb.UnimplementedHealthServer
	ready func() bool
}

// watchInterval is how often Watch re-reads readiness (the registry has no change events).
const watchInterval = time.Second

func (h *health) status(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	switch service {
	case healthpb.Health_ServiceDesc.ServiceName:
		return healthpb.HealthCheckResponse_SERVING, nil
	case "", inference.GRPCInferenceService_ServiceDesc.ServiceName:
		if h.ready() {
			return healthpb.HealthCheckResponse_SERVING, nil
		}
		return healthpb.HealthCheckResponse_NOT_SERVING, nil
	}
	return 0, status.Errorf(codes.NotFound, "unknown service %q; this server has %q and %q", service,
		inference.GRPCInferenceService_ServiceDesc.ServiceName, healthpb.Health_ServiceDesc.ServiceName)
}

func (h *health) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, err := h.status(req.GetService())
	if err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// Watch sends the status now and again whenever it changes. An unknown service is reported
// SERVICE_UNKNOWN, as the protocol asks, rather than ending the stream.
func (h *health) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		st, err := h.status(req.GetService())
		if err != nil {
			st = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
		}
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-t.C:
		}
	}
}
