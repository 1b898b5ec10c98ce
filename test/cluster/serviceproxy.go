package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// ServiceProxy serves an HTTP proxy on 127.0.0.1 until ctx ends and returns its address. It
// sends a request for http://<service>.<namespace>.svc[.cluster.local][:port] to the Service's
// pod (podrunner.ServiceAddr), as a pod's request to that name reaches it, and refuses other
// hosts: the pod runner's processes have no cluster DNS. A Service whose pods run on the real
// node is reached at its ClusterIP, which kube-proxy's rules on this host take to a pod on the
// node's bridge. A process given HTTP_PROXY=http://<addr> calls cluster URLs (an
// InferenceService's status.address.url) unchanged; given HTTPS_PROXY too, a gRPC client (which
// asks the proxy for a CONNECT tunnel) reaches <service>.<namespace>.svc[.cluster.local]:<port>.
func ServiceProxy(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	// A connection per request: a ClusterIP asked for before kube-proxy's rules for it are in
	// reaches whatever the host's default route leads to (on the CI machines an egress proxy
	// that answers every request 404), and a kept-alive connection would keep going there after
	// the rules are in, so a readiness check that began too early never saw the pod.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	rp := &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Host = r.In.Context().Value(proxyTarget{}).(string)
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			tunnel(w, r, kube)
			return
		}
		addr, err := resolveServiceHost(r.Context(), kube, r.URL.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proxyTarget{}, addr)))
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return ln.Addr().String(), nil
}

type proxyTarget struct{}

// resolveServiceHost is where a request for <service>.<namespace>.svc[.cluster.local][:port]
// goes: parseServiceHost, then serviceAddr.
func resolveServiceHost(ctx context.Context, kube kubernetes.Interface, hostport string) (string, error) {
	svc, ns, port, err := parseServiceHost(hostport)
	if err != nil {
		return "", err
	}
	return serviceAddr(ctx, kube, ns, svc, port)
}

// tunnel answers a CONNECT to a cluster Service's port with a TCP tunnel to where serviceAddr
// says the Service's pods answer: gRPC clients (grpc-go follows HTTPS_PROXY) use it.
func tunnel(w http.ResponseWriter, r *http.Request, kube kubernetes.Interface) {
	addr, err := resolveServiceHost(r.Context(), kube, r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	upstream, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "the proxy cannot hijack this connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	go func() {
		// Bytes the client sent after its CONNECT request are already in buf.
		_, _ = io.Copy(upstream, buf)
		if tc, ok := upstream.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		client.Close()
		upstream.Close()
	}()
}

// serviceAddr is where the proxy sends a request for a Service's port: its ClusterIP when its
// pods run on the real node (kube-proxy routes it there), else the pod runner's address.
func serviceAddr(ctx context.Context, kube kubernetes.Interface, ns, name string, port int32) (string, error) {
	svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone && len(svc.Spec.Selector) > 0 {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
		if err != nil {
			return "", fmt.Errorf("service %s/%s: pods: %w", ns, name, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == RealNodeName && p.DeletionTimestamp == nil {
				return net.JoinHostPort(ip, strconv.Itoa(int(port))), nil
			}
		}
	}
	return podrunner.ServiceAddr(ctx, kube, ns, name, port)
}

// parseServiceHost reads <service>.<namespace>.svc[.cluster.local][:port] (port 80 by default).
func parseServiceHost(hostport string) (svc, ns string, port int32, err error) {
	host, p, splitErr := net.SplitHostPort(hostport)
	if splitErr != nil {
		host, p = hostport, "80"
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return "", "", 0, fmt.Errorf("host %q: port %q", hostport, p)
	}
	host = strings.TrimSuffix(strings.TrimSuffix(host, "."), ".cluster.local")
	parts := strings.Split(host, ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return "", "", 0, fmt.Errorf("host %q is not a cluster Service name (<service>.<namespace>.svc.cluster.local)", hostport)
	}
	return parts[0], parts[1], int32(n), nil
}
