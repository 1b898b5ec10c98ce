package protocoltest

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func healthClient(t *testing.T, s *server) healthpb.HealthClient {
	t.Helper()
	conn, err := grpc.NewClient(s.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func checkHealth(t *testing.T, c healthpb.HealthClient, service string) (healthpb.HealthCheckResponse_ServingStatus, codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	resp, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return resp.GetStatus(), status.Code(err)
}

// grpc.health.v1 follows readiness, for Kubernetes gRPC probes: NOT_SERVING while the model
// loads, SERVING once it is in; Watch reports the change.
func TestGRPCHealthFollowsReadiness(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := startLive(t, "--model_name", "iris", "--model_dir", dir)
	c := healthClient(t, s)
	for _, svc := range []string{"", "inference.GRPCInferenceService"} {
		if st, code := checkHealth(t, c, svc); st != healthpb.HealthCheckResponse_NOT_SERVING || code != codes.OK {
			t.Fatalf("Check(%q) while loading = %v %v; want NOT_SERVING", svc, st, code)
		}
	}
	if st, _ := checkHealth(t, c, "grpc.health.v1.Health"); st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check(grpc.health.v1.Health) = %v; want SERVING (the process is live)", st)
	}
	if _, code := checkHealth(t, c, "nope"); code != codes.NotFound {
		t.Fatalf("Check(nope) code = %v; want NotFound", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	watch, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("first Watch status = %v, %v; want NOT_SERVING", first.GetStatus(), err)
	}
	model, err := os.ReadFile(filepath.Join(modelsDir(), "iris", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fifo, model, 0o644); err != nil {
		t.Fatal(err)
	}
	if next, err := watch.Recv(); err != nil || next.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch after load = %v, %v; want SERVING", next.GetStatus(), err)
	}
	if st, _ := checkHealth(t, c, ""); st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check after load = %v; want SERVING", st)
	}
}
