package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

// Bounds of the answer check: one call's limit, and the pause between calls, which grows from
// the first to the last.
const (
	answerCallTimeout = 5 * time.Second
	answerFirstPause  = 100 * time.Millisecond
	answerLastPause   = 2 * time.Second
)

// waitAnswers returns once the model answers its protocol's model-ready call at the endpoint the
// step reports, the predictor Service's address, as the next step will call it. KServe reports
// the InferenceService Ready from its pods' readiness, but the Service's endpoints reach the
// proxies (kube-proxy, the mesh) a moment later: a client in that moment is refused (seen: about
// 1 s). The call is the protocol's own: V2 REST GET /v2/models/<name>/ready, V1 GET
// /v1/models/<name>, gRPC ModelReady. It gives up when ctx ends (the step's deadline), with the
// last answer.
func (b *Backend) waitAnswers(ctx context.Context, s *deploy.Service, ep *deploy.Endpoint, progress func(string)) error {
	var check func(context.Context) error
	var target string
	switch s.ProtocolVersion {
	case "grpc-v2":
		if ep.GRPCAddress == "" {
			return fmt.Errorf("InferenceService %s serves gRPC but its predictor Service has no gRPC port (named grpc or h2c)", s.Name)
		}
		conn, err := grpc.NewClient(ep.GRPCAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("gRPC client for %s: %w", ep.GRPCAddress, err)
		}
		defer conn.Close()
		client := inference.NewGRPCInferenceServiceClient(conn)
		target = fmt.Sprintf("gRPC ModelReady %q at %s", ep.ModelName, ep.GRPCAddress)
		check = func(ctx context.Context) error {
			r, err := client.ModelReady(ctx, &inference.ModelReadyRequest{Name: ep.ModelName})
			switch {
			case err != nil:
				return err
			case !r.GetReady():
				return errors.New("ready: false")
			}
			return nil
		}
	default:
		url := strings.TrimRight(ep.URL, "/") + "/v2/models/" + ep.ModelName + "/ready"
		if s.ProtocolVersion == "v1" {
			url = strings.TrimRight(ep.URL, "/") + "/v1/models/" + ep.ModelName
		}
		target = "GET " + url
		check = func(ctx context.Context) error { return b.getOK(ctx, url) }
	}

	pause, last := answerFirstPause, ""
	for {
		callCtx, cancel := context.WithTimeout(ctx, answerCallTimeout)
		err := check(callCtx)
		cancel()
		if err == nil {
			progress(target + ": the model answers ready")
			return nil
		}
		if msg := err.Error(); msg != last {
			last = msg
			progress(fmt.Sprintf("%s: not answering yet: %s", target, msg))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Ready, but %s did not answer ready: %s", target, last)
		case <-time.After(pause):
		}
		pause = min(2*pause, answerLastPause)
	}
}

// getOK is one GET, on a connection of its own, that succeeds on 200; any other answer is an
// error naming its status and the start of its body (the runtime's {"error"} message).
func (b *Backend) getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	// A connection per call: one opened before the Service's routing was in place (kube-proxy's
	// rules for a new ClusterIP, a mesh's) reached whatever the network sent it to then, and kept
	// alive it would carry every later call there too, however long the routing has been right.
	req.Close = true
	client := b.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
