package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// clusterDNS answers the real node's pods for the cluster's names, as CoreDNS's kubernetes plugin
// does for the records a gang needs: <service>.<namespace>.svc.cluster.local is the Service's
// ClusterIP, or for a headless Service (the Training Operator's per-replica Services: MASTER_ADDR
// is one) the addresses of its endpoints; <hostname>.<service>.<namespace>.svc.cluster.local is
// the pod of a headless Service whose spec.hostname and spec.subdomain name it (JobSet's pods:
// Trainer v2's DMLC_TRACKER_URI is <job>-node-0-0.<job>). Other names go to the host's resolver.
// It listens on UDP at the node IP, port 53, named as clusterDNS in the kubelet's configuration.
type clusterDNS struct {
	kube     kubernetes.Interface
	conn     net.PacketConn
	upstream string
	done     chan struct{}
}

const clusterDomain = "cluster.local."

func startClusterDNS(kube kubernetes.Interface, ip net.IP) (*clusterDNS, error) {
	conn, err := net.ListenPacket("udp4", net.JoinHostPort(ip.String(), "53"))
	if err != nil {
		return nil, fmt.Errorf("cluster DNS on %s:53: %w", ip, err)
	}
	d := &clusterDNS{kube: kube, conn: conn, upstream: hostNameserver(), done: make(chan struct{})}
	go d.serve()
	return d, nil
}

func (d *clusterDNS) stop() {
	d.conn.Close()
	<-d.done
}

// hostNameserver is the first nameserver of the host's /etc/resolv.conf, "" without one.
func hostNameserver() string {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			return net.JoinHostPort(f[1], "53")
		}
	}
	return ""
}

func (d *clusterDNS) serve() {
	defer close(d.done)
	buf := make([]byte, 1500)
	for {
		n, addr, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		req := append([]byte(nil), buf[:n]...)
		go func() {
			if resp := d.answer(req); resp != nil {
				_, _ = d.conn.WriteTo(resp, addr)
			}
		}()
	}
}

// answer builds the reply to one query; nil drops it.
func (d *clusterDNS) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(q.Name.String())
	if !strings.HasSuffix(name, "."+clusterDomain) {
		return d.forward(req)
	}
	resp := dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired},
		Questions: []dnsmessage.Question{q}}
	ips, found := d.lookup(strings.TrimSuffix(name, "."+clusterDomain))
	switch {
	case !found:
		resp.RCode = dnsmessage.RCodeNameError
	case q.Type == dnsmessage.TypeA:
		for _, ip := range ips {
			var a [4]byte
			copy(a[:], ip.To4())
			resp.Answers = append(resp.Answers, dnsmessage.Resource{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
				Body:   &dnsmessage.AResource{A: a},
			})
		}
	}
	out, err := resp.Pack()
	if err != nil {
		return nil
	}
	return out
}

// lookup resolves "<service>.<namespace>.svc" and "<hostname>.<service>.<namespace>.svc" (the
// name without the cluster domain).
func (d *clusterDNS) lookup(name string) ([]net.IP, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 3 || len(parts) > 4 || parts[len(parts)-1] != "svc" {
		return nil, false
	}
	// hostname is the pod's spec.hostname when the name is one pod's of a headless Service.
	var hostname string
	if len(parts) == 4 {
		hostname, parts = parts[0], parts[1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	svc, err := d.kube.CoreV1().Services(parts[1]).Get(ctx, parts[0], metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	headless := svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone
	if !headless {
		if hostname != "" {
			return nil, false
		}
		return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, true
	}
	slices, err := d.kube.DiscoveryV1().EndpointSlices(parts[1]).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + parts[0]})
	if err != nil {
		return nil, true
	}
	var ips []net.IP
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready && !svc.Spec.PublishNotReadyAddresses {
				continue
			}
			// The endpoint slice controller sets an endpoint's hostname from the pod's
			// spec.hostname when its spec.subdomain names this Service.
			if hostname != "" && (e.Hostname == nil || *e.Hostname != hostname) {
				continue
			}
			for _, a := range e.Addresses {
				if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
					ips = append(ips, ip)
				}
			}
		}
	}
	if hostname != "" && len(ips) == 0 {
		return nil, false // no such pod (yet): NXDOMAIN, as CoreDNS answers
	}
	return ips, true
}

// forward relays a query for another name to the host's resolver.
func (d *clusterDNS) forward(req []byte) []byte {
	if d.upstream == "" {
		return nil
	}
	c, err := net.DialTimeout("udp", d.upstream, 2*time.Second)
	if err != nil {
		return nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(req); err != nil {
		return nil
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}
