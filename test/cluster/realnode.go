package cluster

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// A real node (Options.RealNode): a kubelet, kube-proxy in iptables mode and a containerd with a
// CNI bridge, so pods run as containers of their images, as in a cluster. Everything is under the
// run folder but what the kernel keeps for the host (iptables chains, the bridge, kernel settings,
// a few host folders), which Stop undoes from a snapshot taken before (see hoststate.go). One real
// node runs on a host at a time: two kube-proxies would each rewrite the other's rules, so a
// second test binary waits for the first to stop.

// ErrNoRealNodes wraps why this machine cannot run a real node (not root, no overlayfs, no
// cgroups, no containerd): a test may skip on it outside CI, as on ErrTools.
var ErrNoRealNodes = errors.New("real nodes unavailable on this machine")

const (
	// RealNodeName is the real node's name (and its kubernetes.io/hostname label).
	RealNodeName = "real-node"
	// RealNodeLabel is set ("true") on the real node, for node selectors.
	RealNodeLabel = "gangboost.dev/real-node"
	// realBridge is the CNI bridge on the host, the pods' gateway.
	realBridge = "gangboost0"
	// realPodCIDR is the bridge's subnet (host-local IPAM); realClusterCIDR what kube-proxy takes
	// as the pods' range.
	realPodCIDR     = "10.244.0.0/24"
	realClusterCIDR = "10.244.0.0/16"
	// realNodeLock is held, host-wide, while a real node runs.
	realNodeLock = "/run/gangboost-real-node.lock"
	// realNodeHostFile keeps the host's state from before the running real node (JSON HostState)
	// until its Stop has undone its changes: a run that dies first leaves it for the next to undo.
	realNodeHostFile = "/run/gangboost-real-node.host.json"
)

// realNode is the running real node.
type realNode struct {
	ip        net.IP
	dir       string
	before    HostState
	unlock    func()
	cd        *containerd
	kubelet   *process
	proxy     *process
	proxyCfg  string
	forward   net.Listener
	dns       *clusterDNS
	forwardWG sync.WaitGroup
	// ready is the time from starting the kubelet to the node being Ready and untainted.
	ready time.Duration
}

// RealNodePackages are the Debian packages a real node needs.
var RealNodePackages = []string{"containerd", "runc", "containernetworking-plugins", "iptables", "nftables"}

// RealNodeSupport says why this machine cannot run a real node, or nil.
func RealNodeSupport() error {
	if os.Geteuid() != 0 {
		return errors.New("a real node needs root (mounts, network namespaces, iptables); run the tests as root")
	}
	fs, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		return errors.New("the kernel has no overlay file system (containerd's overlayfs snapshotter needs it; try modprobe overlay)")
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err != nil || !strings.Contains(string(b), "memory") {
			return errors.New("no memory cgroup controller under /sys/fs/cgroup (the kubelet and runc need cgroups)")
		}
	}
	for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc", "iptables", "nft", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not found in PATH: install the Debian packages %s", b, strings.Join(RealNodePackages, " "))
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			return fmt.Errorf("CNI plugin %s missing in %s: install containernetworking-plugins", p, cniBinDir)
		}
	}
	if _, err := hostIP(); err != nil {
		return err
	}
	return nil
}

// ensureRealNodePackages installs the missing Debian packages with apt-get, as root.
func ensureRealNodePackages(ctx context.Context, log io.Writer) error {
	var missing []string
	for _, p := range RealNodePackages {
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output(); err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 || os.Geteuid() != 0 {
		return nil
	}
	fmt.Fprintf(log, "cluster: installing %s with apt-get for the real node\n", strings.Join(missing, " "))
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(missing, " "), err, tail(string(out), 2000))
	}
	return nil
}

// HostIP is the address at which pods on the real node reach a server of the host (the node's
// InternalIP): a test's object store, for one.
func HostIP() (net.IP, error) { return hostIP() }

// hostIP is the host's first global IPv4 address on an interface that is up: the node's
// InternalIP (the kubelet refuses loopback) and where pods reach the API server.
func hostIP() (net.IP, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || i.Name == realBridge {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.To4(), nil
			}
		}
	}
	return nil, errors.New("no interface with a global IPv4 address is up: the kubelet needs a non-loopback node IP")
}

// lockHost takes the host-wide real-node lock, waiting (and saying so) while another run holds it.
func lockHost(ctx context.Context, log io.Writer) (func(), error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			break
		}
		if !said {
			fmt.Fprintf(log, "cluster: waiting for the real node of another test run to stop (lock %s)\n", realNodeLock)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", realNodeLock, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// cniConfig is the pods' network: a bridge (the pods' gateway) with host-local addresses whose
// allocations stay in the run folder; no masquerade, since pods only reach the host and Services.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "gangboost",
  "plugins": [{
    "type": "bridge",
    "bridge": "{{bridge}}",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "{{subnet}}"}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": "{{ipam}}"
    }
  }]
}
`

// startRealNode starts containerd, the kubelet and kube-proxy of the real node and waits for the
// node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context, p *pki) error {
	if err := ensureRealNodePackages(ctx, c.opts.Log); err != nil {
		return fmt.Errorf("%w: %v", ErrNoRealNodes, err)
	}
	if err := RealNodeSupport(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoRealNodes, err)
	}
	for _, b := range []string{"kubelet", "kube-proxy"} {
		if c.Binaries[b] == "" {
			return fmt.Errorf("%w: no %s binary among the tools", ErrTools, b)
		}
	}
	unlock, err := lockHost(ctx, c.opts.Log)
	if err != nil {
		return err
	}
	sweepStaleHost(c.Binaries["kube-proxy"])
	if b, err := os.ReadFile(realNodeHostFile); err == nil {
		var old HostState
		if json.Unmarshal(b, &old) == nil {
			failed := restoreHost(old, realBridge)
			fmt.Fprintf(c.opts.Log, "cluster: undid the host changes of a real node whose run died (%d left: %s)\n", len(failed), strings.Join(failed, "; "))
		}
	}
	ip, _ := hostIP()
	r := &realNode{ip: ip, dir: filepath.Join(c.Dir, "node"), unlock: unlock, before: SnapshotHost()}
	c.real = r
	state, err := json.Marshal(r.before)
	if err != nil {
		return err
	}
	if err := os.WriteFile(realNodeHostFile, state, 0o600); err != nil {
		return err
	}
	for _, d := range []string{"cni/net.d", "cni/ipam", "kubelet", "pod-logs", "pki"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return err
		}
	}
	cni := strings.NewReplacer("{{bridge}}", realBridge, "{{subnet}}", realPodCIDR, "{{ipam}}", filepath.Join(r.dir, "cni", "ipam")).Replace(cniConfig)
	if err := os.WriteFile(filepath.Join(r.dir, "cni", "net.d", "10-gangboost.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	pause, err := buildPauseImage(ctx, c.opts.RepoRoot, r.dir)
	if err != nil {
		return err
	}
	if r.cd, err = c.startContainerd(ctx, filepath.Join(r.dir, "containerd"), filepath.Join(r.dir, "cni", "net.d")); err != nil {
		return err
	}
	if err := r.cd.importImage(ctx, pause); err != nil {
		return err
	}
	if err := c.realNodeAccess(ctx, p, r); err != nil {
		return err
	}
	if err := c.forwardAPI(ctx, r); err != nil {
		return err
	}
	if r.dns, err = startClusterDNS(c.Kube, r.ip); err != nil {
		return err
	}
	if err := c.startKubelet(ctx, r); err != nil {
		return err
	}
	return c.startKubeProxy(ctx, r)
}

// realNodeAccess issues the kubelet's client and serving certificates and kube-proxy's client
// certificate from the run's CA, writes their kubeconfigs, and binds the nodes' group to the
// system:node role (the API server authorizes with RBAC alone; kube-proxy's system:node-proxier
// binding is built in).
func (c *Cluster) realNodeAccess(ctx context.Context, p *pki, r *realNode) error {
	certs := []struct {
		name string
		spec certSpec
	}{
		{"kubelet-client", certSpec{commonName: "system:node:" + RealNodeName, organization: []string{"system:nodes"}, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
		{"kubelet-serving", certSpec{commonName: RealNodeName, dnsNames: []string{RealNodeName}, ips: []net.IP{r.ip}, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"kube-proxy-client", certSpec{commonName: "system:kube-proxy", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	}
	for _, ct := range certs {
		kp, err := issue(ct.spec, p.ca)
		if err != nil {
			return err
		}
		crt, key := filepath.Join(r.dir, "pki", ct.name+".crt"), filepath.Join(r.dir, "pki", ct.name+".key")
		if err := os.WriteFile(crt, kp.CertPEM, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(key, kp.KeyPEM, 0o600); err != nil {
			return err
		}
		if strings.HasSuffix(ct.name, "-client") {
			if err := writeKubeconfig(filepath.Join(r.dir, strings.TrimSuffix(ct.name, "-client")+".kubeconfig"), c.Config.Host, p.CACert,
				func(a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = crt, key }); err != nil {
				return err
			}
		}
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gangboost-test:nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind system:nodes to system:node: %w", err)
	}
	return nil
}

// forwardAPI lets pods reach the API server, which listens on 127.0.0.1 only: a TCP forwarder on
// the node IP at the API server's port, written as the endpoint of the kubernetes Service (the
// API server reconciles none here), so in-cluster clients reach it through the Service's
// ClusterIP as in a cluster. The API server's certificate names that ClusterIP.
func (c *Cluster) forwardAPI(ctx context.Context, r *realNode) error {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	if r.forward, err = net.Listen("tcp", net.JoinHostPort(r.ip.String(), u.Port())); err != nil {
		return fmt.Errorf("forward the API server to the node IP: %w", err)
	}
	r.forwardWG.Add(1)
	go func() {
		defer r.forwardWG.Done()
		for {
			in, err := r.forward.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				io.Copy(in, out)
			}()
		}
	}()
	ip := r.ip.String()
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
	if _, err := c.Kube.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("write the kubernetes Endpoints: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "gangboost-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("write the kubernetes EndpointSlice: %w", err)
	}
	return nil
}

// kubeletConfig: the flags that work on a host without systemd, with cgroup v1 and a nested
// cgroup (no QoS cgroups, nothing enforced on allocatable), every folder in the run folder
// (pod logs too), anonymous AlwaysAllow for the API server's logs requests, image garbage
// collection and disk eviction off (a shared disk's use is not the test's to judge), and no
// iptables chains of its own.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{ip}}
port: {{port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{healthz}}
tlsCertFile: {{dir}}/pki/kubelet-serving.crt
tlsPrivateKeyFile: {{dir}}/pki/kubelet-serving.key
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://{{socket}}
podLogsDir: {{dir}}/pod-logs
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
clusterDNS: [{{ip}}]
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
makeIPTablesUtilChains: false
serializeImagePulls: false
registerNode: true
`

// startKubelet starts the kubelet with the probe-tested flags and waits until the node is Ready.
func (c *Cluster) startKubelet(ctx context.Context, r *realNode) error {
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	cfg := strings.NewReplacer("{{ip}}", r.ip.String(), "{{port}}", strconv.Itoa(ps[0]), "{{healthz}}", strconv.Itoa(ps[1]),
		"{{dir}}", r.dir, "{{socket}}", r.cd.socket).Replace(kubeletConfig)
	cfgPath := filepath.Join(r.dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	t0 := time.Now()
	if r.kubelet, err = c.start("kubelet", c.Binaries["kubelet"], []string{
		"--config=" + cfgPath,
		"--kubeconfig=" + filepath.Join(r.dir, "kubelet.kubeconfig"),
		"--root-dir=" + filepath.Join(r.dir, "kubelet"),
		"--cert-dir=" + filepath.Join(r.dir, "pki"),
		"--hostname-override=" + RealNodeName,
		"--node-ip=" + r.ip.String(),
		"--node-labels=" + RealNodeLabel + "=true",
		"--cgroup-driver=cgroupfs", "--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable=",
		"--v=1",
	}, nil); err != nil {
		return err
	}
	if err := waitReady(ctx, r.kubelet, 90*time.Second, func(ctx context.Context) error {
		return nodeSchedulable(ctx, c.Kube, RealNodeName)
	}); err != nil {
		return err
	}
	r.ready = time.Since(t0)
	c.Nodes = append(c.Nodes, RealNodeName)
	fmt.Fprintf(c.opts.Log, "cluster: real node %s (%s) Ready %s after the kubelet started\n", RealNodeName, r.ip, r.ready.Round(time.Millisecond))
	return nil
}

// kubeProxyConfig: iptables mode, the pods' range as the cluster's, and every kernel setting left
// as the host has it (conntrack sizes and timeouts, route_localnet for localhost NodePorts).
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{dir}}/kube-proxy.kubeconfig
mode: iptables
hostnameOverride: {{node}}
clusterCIDR: {{cidr}}
bindAddress: {{ip}}
healthzBindAddress: 127.0.0.1:{{healthz}}
metricsBindAddress: 127.0.0.1:{{metrics}}
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  masqueradeAll: false
  minSyncPeriod: 0s
  syncPeriod: 30s
`

// startKubeProxy starts kube-proxy and waits for its first sync of the Services.
func (c *Cluster) startKubeProxy(ctx context.Context, r *realNode) error {
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	cfg := strings.NewReplacer("{{dir}}", r.dir, "{{node}}", RealNodeName, "{{cidr}}", realClusterCIDR, "{{ip}}", r.ip.String(),
		"{{healthz}}", strconv.Itoa(ps[0]), "{{metrics}}", strconv.Itoa(ps[1])).Replace(kubeProxyConfig)
	r.proxyCfg = filepath.Join(r.dir, "kube-proxy.yaml")
	if err := os.WriteFile(r.proxyCfg, []byte(cfg), 0o644); err != nil {
		return err
	}
	if r.proxy, err = c.start("kube-proxy", c.Binaries["kube-proxy"], []string{"--config=" + r.proxyCfg, "--v=1"}, nil); err != nil {
		return err
	}
	return waitReady(ctx, r.proxy, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", ps[0]))
	})
}

// stopRealNode stops the real node and undoes its changes to the host: the node is cordoned and
// its pods deleted, so the kubelet stops their containers and tears their network down; then
// kube-proxy (and its rules), the kubelet, any container left, containerd and its shims; then
// the mounts under the run folder, and whatever the host snapshot shows was added. It returns
// what it could not undo; the run folder is kept when a mount remains in it.
func (c *Cluster) stopRealNode() []string {
	r := c.real
	if r == nil {
		return nil
	}
	c.real = nil
	defer r.unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if r.kubelet != nil && !mustExited(r.kubelet) && c.Kube != nil {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		_, _ = c.Kube.CoreV1().Nodes().Patch(ctx, RealNodeName, types.MergePatchType, patch, metav1.PatchOptions{})
		sel := fields.OneTermEqualSelector("spec.nodeName", RealNodeName).String()
		if pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel}); err == nil {
			for _, p := range pods.Items {
				_ = c.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
			}
		}
		if r.cd != nil {
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			for r.cd.runningTasks(wctx) > 0 && wctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
			}
			wcancel()
		}
	}
	if r.proxy != nil {
		r.proxy.stop(10 * time.Second)
		// kube-proxy --cleanup removes the rules of every mode (iptables, ipvs, nftables).
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		_ = exec.CommandContext(cctx, c.Binaries["kube-proxy"], "--cleanup", "--config="+r.proxyCfg).Run()
		ccancel()
	}
	if r.kubelet != nil {
		r.kubelet.stop(10 * time.Second)
	}
	if r.cd != nil {
		r.cd.removeTasks(ctx)
		r.cd.proc.stop(10 * time.Second)
		r.cd.killShims()
	}
	if r.dns != nil {
		r.dns.stop()
	}
	if r.forward != nil {
		r.forward.Close()
		r.forwardWG.Wait()
	}
	var failed []string
	if left := unmountUnder(c.Dir); len(left) > 0 {
		c.opts.KeepDir = true
		failed = append(failed, fmt.Sprintf("mounts left under the run folder (kept): %s", strings.Join(left, ", ")))
	}
	failed = append(failed, restoreHost(r.before, realBridge)...)
	if len(failed) > 0 {
		fmt.Fprintf(c.opts.Log, "cluster: the real node left on the host:\n  %s\n", strings.Join(failed, "\n  "))
	} else {
		os.Remove(realNodeHostFile)
	}
	return failed
}

func mustExited(p *process) bool { e, _ := p.exited(); return e }

// RealNode reports the real node's name, or "" when the control plane has none.
func (c *Cluster) RealNode() string {
	if c.real == nil {
		return ""
	}
	return RealNodeName
}

// RealNodeReady is the time from starting the kubelet to its node being Ready.
func (c *Cluster) RealNodeReady() time.Duration {
	if c.real == nil {
		return 0
	}
	return c.real.ready
}

// ImportImage imports an image archive (OCI or Docker; make images writes them to dist/) into the
// real node's containerd, where pods find it without a pull.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	if c.real == nil {
		return errors.New("import image: the control plane has no real node (Options.RealNode)")
	}
	return c.real.cd.importImage(ctx, archive)
}

// RealNodePIDs are the process ids of the real node's containerd, kubelet and kube-proxy.
func (c *Cluster) RealNodePIDs() map[string]int {
	out := map[string]int{}
	if c.real == nil {
		return out
	}
	for _, p := range []*process{c.real.cd.proc, c.real.kubelet, c.real.proxy} {
		if p != nil {
			out[p.Name] = p.PID()
		}
	}
	return out
}

// Run is Main without the exit: it starts the shared control plane, runs the tests, stops it and
// returns the exit code, for a TestMain that checks something after Stop (the host left clean).
func Run(m *testing.M, opts Options) int { return runMain(m, opts) }

// sweepStaleNode ends what the real node of a dead run (SIGKILL, go test -timeout: its
// containerd, kubelet and kube-proxy die with it) left running in its run folder dir: its
// containers (runc state under node/containerd/runc) and their shims, and it detaches the mounts
// under dir, so the folder can be removed without reaching through a mount. It returns the
// mounts that remain.
func sweepStaleNode(dir string) []string {
	runcRoot := filepath.Join(dir, "node", "containerd", "runc", "k8s.io")
	if _, err := os.Stat(runcRoot); err == nil {
		if out, err := exec.Command("runc", "--root", runcRoot, "list", "--quiet").Output(); err == nil {
			for _, id := range strings.Fields(string(out)) {
				_ = exec.Command("runc", "--root", runcRoot, "kill", "--all", id, "KILL").Run()
				_ = exec.Command("runc", "--root", runcRoot, "delete", "--force", id).Run()
			}
		}
	}
	(&containerd{socket: filepath.Join(dir, "node", "containerd", "containerd.sock")}).killShims()
	return unmountUnder(dir)
}

// sweepStaleHost removes the host changes a dead run's real node left that no snapshot will undo:
// the bridge and kube-proxy's rules. Only under the host lock, where no real node runs.
func sweepStaleHost(kubeProxy string) {
	if _, err := net.InterfaceByName(realBridge); err != nil {
		return
	}
	_ = exec.Command("ip", "link", "delete", realBridge).Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, kubeProxy, "--cleanup").Run()
}
