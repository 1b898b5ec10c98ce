package podrunner

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeKind names a probe as the kubelet does in its events ("Readiness
// probe failed: ...").
type probeKind string

const (
	readiness probeKind = "Readiness"
	liveness  probeKind = "Liveness"
	startup   probeKind = "Startup"
)

// maxProbeOutput bounds what a probe keeps of a response body or command
// output: the kubelet reads at most 10 KiB of an HTTP probe's body.
const maxProbeOutput = 10 << 10

// prober runs one container's probes against 127.0.0.1 (every pod shares
// the host network).
type prober struct {
	container corev1.Container
	// exec runs an exec probe's command the way the container's own
	// command is run (mapped executable, the container's env and dir).
	exec func(ctx context.Context, argv []string) ([]byte, error)
}

// probe runs p once. ok follows the kubelet's rules (HTTP 200-399, TCP
// connect, gRPC SERVING, exit code 0); output says why it failed, with the
// start of the response body (for an HTTP probe) or the command's output.
func (pr *prober) probe(ctx context.Context, p *corev1.Probe) (ok bool, output string) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		return pr.httpGet(ctx, p.HTTPGet)
	case p.TCPSocket != nil:
		port, err := pr.port(p.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s:%d: %v", loopback, port, err)
		}
		conn.Close()
		return true, ""
	case p.GRPC != nil:
		return pr.grpcHealth(ctx, p.GRPC)
	case p.Exec != nil:
		if pr.exec == nil {
			return false, "exec probes are not supported here"
		}
		out, err := pr.exec(ctx, p.Exec.Command)
		if err != nil {
			return false, strings.TrimSpace(fmt.Sprintf("command %q: %v: %s", p.Exec.Command, err, truncate(out)))
		}
		return true, ""
	}
	return false, "probe has no handler (httpGet, tcpSocket, grpc or exec)"
}

// port resolves a probe's port: a number, or the name of a containerPort.
func (pr *prober) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range pr.container.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", pr.container.Name, p.StrVal)
}

func (pr *prober) httpGet(ctx context.Context, g *corev1.HTTPGetAction) (bool, string) {
	port, err := pr.port(g.Port)
	if err != nil {
		return false, err.Error()
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(loopback, strconv.Itoa(port)), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.32")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	// The kubelet skips certificate checks for HTTPS probes; a redirect
	// counts as success (2xx-3xx) without being followed here. One client
	// per probe keeps no connection open between probes.
	hc := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Sprintf("Get %q: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeOutput))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	// The kubelet's own message, followed by the body, where a server says
	// why it is not ready (a missing model file, say).
	msg := fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	if b := bytes.TrimSpace(body); len(b) > 0 {
		msg += ": " + string(b)
	}
	return false, msg
}

func (pr *prober) grpcHealth(ctx context.Context, g *corev1.GRPCAction) (bool, string) {
	addr := net.JoinHostPort(loopback, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, fmt.Sprintf("grpc %s: %v", addr, err)
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, fmt.Sprintf("rpc error: %v", err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.Status)
	}
	return true, ""
}

func truncate(b []byte) string {
	if len(b) > maxProbeOutput {
		b = b[:maxProbeOutput]
	}
	return string(bytes.TrimSpace(b))
}

// probeSchedule is a probe's timing with the API's defaults filled in.
type probeSchedule struct {
	initialDelay, period time.Duration
	success, failure     int
}

func scheduleOf(p *corev1.Probe) probeSchedule {
	s := probeSchedule{
		initialDelay: time.Duration(p.InitialDelaySeconds) * time.Second,
		period:       time.Duration(p.PeriodSeconds) * time.Second,
		success:      int(p.SuccessThreshold),
		failure:      int(p.FailureThreshold),
	}
	if s.period <= 0 {
		s.period = 10 * time.Second
	}
	if s.success <= 0 {
		s.success = 1
	}
	if s.failure <= 0 {
		s.failure = 3
	}
	return s
}

// execProbe runs an exec probe's argv as a local command.
func execProbe(l *launch, resolve func(string) (string, error)) func(ctx context.Context, argv []string) ([]byte, error) {
	return func(ctx context.Context, argv []string) ([]byte, error) {
		if len(argv) == 0 {
			return nil, fmt.Errorf("empty command")
		}
		bin, err := resolve(argv[0])
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, bin, argv[1:]...)
		cmd.Env, cmd.Dir = l.env, l.dir
		return cmd.CombinedOutput()
	}
}
