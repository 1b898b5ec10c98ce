package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// ServiceProxy serves an HTTP proxy on 127.0.0.1 until ctx ends and returns its address. It
// sends a request for http://<service>.<namespace>.svc[.cluster.local][:port] to the Service's
// pod (podrunner.ServiceAddr), as a pod's request to that name reaches it, and refuses other
// hosts: there is no cluster DNS or kube-proxy here. A process given HTTP_PROXY=http://<addr>
// calls cluster URLs (an InferenceService's status.address.url) unchanged.
func ServiceProxy(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Host = r.In.Context().Value(proxyTarget{}).(string)
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc, ns, port, err := parseServiceHost(r.URL.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		addr, err := podrunner.ServiceAddr(r.Context(), kube, ns, svc, port)
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
