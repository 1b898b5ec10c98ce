package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

const (
	serviceCIDR         = "10.96.0.0/16"
	serviceIPKubernetes = "10.96.0.1"
	// GPUResource is the extended resource fake nodes advertise for GPUs.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// FakeNodeAnnotation marks the nodes KWOK keeps alive; the pod runner
	// runs the pods bound to them.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
)

// Options configure Start.
type Options struct {
	// Nodes to create; default two nodes with 8 CPUs, 32Gi and one GPU each.
	Nodes []NodeSpec
	// Log receives progress lines; default os.Stderr.
	Log io.Writer
	// RepoRoot is the repository (for operator-config and the tools
	// modules); default found from the working directory.
	RepoRoot string
	// KeepDir keeps the run folder (logs, certificates) after Stop; also
	// set by GANGBOOST_KEEP_CLUSTER=1 and after a failed start.
	KeepDir bool
	// SchedulePeriod of the Volcano scheduler; default 1s (Volcano's own).
	SchedulePeriod time.Duration
	// PodRunner, when set, runs the pods bound to fake nodes as local
	// processes (see package podrunner).
	PodRunner *podrunner.Options
	// KServe starts KServe's controller manager and its webhooks
	// (RawDeployment mode); it adds a few seconds to the start, so only test
	// binaries that serve models ask for it.
	KServe bool
	// KServeAPI installs KServe's CRDs without its controller, for tests of what the API server
	// makes of InferenceServices; KServe implies it. Those CRDs cost the API server about 8 of
	// the 27 CPU-seconds a plane takes to start (measured on the 2-core VM, 2026-11-29), so a
	// plane without either has no KServe API.
	KServeAPI bool
	// KServeVersion is the KServe release to start: KServeVersion (the default) or
	// KServeKubeflowVersion, the one Kubeflow's manifests install.
	KServeVersion string
	// TrainerV2 starts the JobSet controller and Kubeflow Trainer v2's
	// controller manager with their webhooks, so TrainJobs run (gang
	// scheduled by Volcano when their runtime asks for it); only test
	// binaries that run TrainJobs ask for it.
	TrainerV2 bool
	// RealNode adds a real node (realnode.go): a kubelet, kube-proxy and containerd that run
	// pods as containers of their images. It needs root; elsewhere Start fails with
	// ErrNoRealNodes.
	RealNode bool
}

func (o *Options) defaults() error {
	if len(o.Nodes) == 0 {
		o.Nodes = []NodeSpec{
			{Name: "gpu-node-1", CPU: "8", Memory: "32Gi", GPUs: 1},
			{Name: "gpu-node-2", CPU: "8", Memory: "32Gi", GPUs: 1},
		}
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.KServeVersion == "" {
		o.KServeVersion = KServeVersion
	}
	if _, ok := kserveManagers[o.KServeVersion]; !ok {
		return fmt.Errorf("KServe %s: the test plane has %s and %s", o.KServeVersion, KServeVersion, KServeKubeflowVersion)
	}
	if os.Getenv("GANGBOOST_KEEP_CLUSTER") != "" {
		o.KeepDir = true
	}
	if o.SchedulePeriod == 0 {
		o.SchedulePeriod = time.Second
	}
	if o.RepoRoot == "" {
		r, err := RepoRoot()
		if err != nil {
			return err
		}
		o.RepoRoot = r
	}
	return nil
}

// Timings are measured while starting.
type Timings struct {
	// Tools is the time spent building or finding the tools.
	Tools time.Duration
	// ToolsBuilt lists tools built (not found in the cache) by this start.
	ToolsBuilt []BuildReport
	// ControlPlane is the time from launching etcd until every component
	// is ready and the nodes are Ready.
	ControlPlane time.Duration
	// Phases are the steps of ControlPlane in order.
	Phases []Phase
}

// Phase is one timed step of Start.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir holds certificates, configs and logs/<component>.log.
	Dir    string
	LogDir string
	// Kubeconfig is an admin kubeconfig file.
	Kubeconfig string
	Config     *rest.Config
	Kube       kubernetes.Interface
	// Client is a controller-runtime client whose scheme knows the core
	// types, CRDs, kubeflow.org/v1, scheduling.volcano.sh/v1beta1 and
	// serving.kserve.io (v1alpha1, v1beta1).
	Client   client.Client
	Scheme   *runtime.Scheme
	Binaries Binaries
	Timings  Timings
	// OperatorArgs are the training operator's arguments from the rendered
	// operator-config Deployment, as started (before the listen flags the
	// test adds).
	OperatorArgs []string
	// OperatorManifests is the rendered operator-config.
	OperatorManifests *OperatorManifests
	// Runner runs pods bound to fake nodes (nil unless Options.PodRunner).
	Runner *podrunner.Runner
	// ServiceProxy is the URL of the HTTP proxy that routes Service names to pods
	// (http://<service>.<namespace>.svc.cluster.local), every pod's HTTP_PROXY; set with the
	// pod runner.
	ServiceProxy string
	// kubeletPort is the nodes' kubelet port, where the pod runner serves container logs;
	// servingCert and servingKey are the API server's certificate for 127.0.0.1, which it uses.
	kubeletPort             int
	servingCert, servingKey string
	// mountsErr says why pods do not get their volumes at their mount paths (nil: they do).
	mountsErr error
	// Nodes are the fake nodes' names.
	Nodes []string

	opts       Options
	procs      []*process
	etcdDir    string
	etcdURL    string
	stopRunner context.CancelFunc
	runnerDone chan struct{}
	stopOnce   sync.Once
	real       *realNode
}

// ErrTools wraps failures to build or find the control-plane binaries:
// the only reason a test may skip (outside CI).
var ErrTools = errors.New("control-plane tools unavailable")

// Start builds (or finds cached) tools and starts a control plane. On error
// everything started is stopped and the error carries the logs' tails.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts}
	t0 := time.Now()
	bins, reports, err := EnsureTools(ctx, opts.Log)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTools, err)
	}
	c.Binaries = bins
	c.Timings.Tools = time.Since(t0)
	for _, r := range reports {
		if !r.Cached {
			c.Timings.ToolsBuilt = append(c.Timings.ToolsBuilt, r)
		}
	}

	sweepStale()
	c.Dir, err = os.MkdirTemp("", "gangboost-cluster-")
	if err != nil {
		return nil, err
	}
	if err := writeOwner(c.Dir); err != nil {
		return nil, err
	}
	c.LogDir = filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// The run folder stays for inspection after a failed start.
			c.opts.KeepDir = true
			err = fmt.Errorf("%w\n%s\nrun folder kept: %s", err, c.LogTails(40), c.Dir)
			c.Stop()
		}
	}()
	start := time.Now()
	phase := func(name string, f func() error) error {
		p0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		d := time.Since(p0)
		c.Timings.Phases = append(c.Timings.Phases, Phase{name, d})
		logf(opts.Log, start, "%s ready (%s)", name, d.Round(time.Millisecond))
		return nil
	}
	var p *pki
	if c.kubeletPort, err = FreePort(); err != nil {
		return nil, err
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"etcd", func() error { return c.startEtcd(ctx) }},
		{"kube-apiserver", func() error {
			var err error
			if p, err = newPKI(c.Dir); err != nil {
				return err
			}
			c.servingCert, c.servingKey = p.ServerCert, p.ServerKey
			return c.startAPIServer(ctx, p)
		}},
		{"crds", func() error { return c.applyCRDs(ctx) }},
		{"kube-controller-manager", func() error { return c.startControllerManager(ctx, p) }},
		{"kwok+nodes", func() error { return c.startKWOKAndNodes(ctx) }},
		{"kube-scheduler", func() error { return c.startScheduler(ctx) }},
		{"volcano-scheduler", func() error { return c.startVolcano(ctx) }},
		{"training-operator", func() error { return c.startTrainingOperator(ctx, p) }},
	}
	if opts.KServe {
		steps = append(steps, struct {
			name string
			f    func() error
		}{"kserve-manager", func() error { return c.startKServe(ctx) }})
	}
	if opts.TrainerV2 {
		steps = append(steps, struct {
			name string
			f    func() error
		}{"jobset-controller", func() error { return c.startJobSet(ctx) }}, struct {
			name string
			f    func() error
		}{"trainer-controller-manager", func() error { return c.startTrainer(ctx) }})
	}
	if opts.RealNode {
		steps = append(steps, struct {
			name string
			f    func() error
		}{"real-node", func() error { return c.startRealNode(ctx, p) }})
	}
	for _, s := range steps {
		if err := phase(s.name, s.f); err != nil {
			return nil, err
		}
	}
	if opts.PodRunner != nil {
		if err := phase("pod-runner", func() error { return c.startRunner(*opts.PodRunner) }); err != nil {
			return nil, err
		}
	}
	c.Timings.ControlPlane = time.Since(start)
	logf(opts.Log, start, "control plane ready in %s (tools %s); logs in %s",
		c.Timings.ControlPlane.Round(time.Millisecond), c.Timings.Tools.Round(time.Millisecond), c.LogDir)
	return c, nil
}

func (c *Cluster) start(name, bin string, args, env []string) (*process, error) {
	p, err := startProcess(c.LogDir, name, bin, args, env)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitReady polls check until it returns nil, failing early when the
// process has exited (its log says why).
func waitReady(ctx context.Context, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if exited, err := p.exited(); exited {
			return fmt.Errorf("%s exited: %v (log %s)", p.Name, err, p.LogPath)
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v (log %s)", p.Name, timeout, last, p.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpGetOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	// etcd 3.4 (Debian) fsyncs every write; on tmpfs that costs nothing,
	// which makes the API server several times faster on slow disks.
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, etcdDirPrefix)
	if err != nil {
		return err
	}
	c.etcdDir = dir
	if err := writeOwner(dir); err != nil {
		return err
	}
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	clientPort, peerPort := ps[0], ps[1]
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := c.start("etcd", c.Binaries["etcd"], []string{
		"--name=default",
		"--data-dir=" + filepath.Join(dir, "data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--log-level=warn",
	}, nil)
	if err != nil {
		return err
	}
	c.etcdURL = clientURL
	return waitReady(ctx, p, 30*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, clientURL+"/health")
	})
}

func (c *Cluster) startAPIServer(ctx context.Context, p *pki) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	proc, err := c.start("kube-apiserver", c.Binaries["kube-apiserver"], []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + p.ServerCert,
		"--tls-private-key-file=" + p.ServerKey,
		"--client-ca-file=" + p.CACert,
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC",
		// pods/log goes to the pod runner's log endpoint at the node's InternalIP (127.0.0.1),
		// which serves with the API server's own certificate.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + p.CACert,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--profiling=false",
		"--endpoint-reconciler-type=none",
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	cfg := &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   p.CACert,
			CertFile: p.AdminCert,
			KeyFile:  p.AdminKey,
		},
		QPS:   200,
		Burst: 400,
	}
	c.Config = cfg
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, hc, host+"/readyz")
	}); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, host, p.CACert, func(a *clientcmdapi.AuthInfo) {
		a.ClientCertificate, a.ClientKey = p.AdminCert, p.AdminKey
	}); err != nil {
		return err
	}
	c.Scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, kubeflowv1.AddToScheme, schedulingv1beta1.AddToScheme,
		kserveapi.AddToScheme,
	} {
		if err := add(c.Scheme); err != nil {
			return err
		}
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	c.Client, err = client.New(cfg, client.Options{Scheme: c.Scheme})
	return err
}

func writeKubeconfig(path, host, caFile string, auth func(*clientcmdapi.AuthInfo)) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: caFile}
	a := &clientcmdapi.AuthInfo{}
	auth(a)
	cfg.AuthInfos["test"] = a
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	return clientcmd.WriteToFile(*cfg, path)
}

// applyCRDs installs the CRDs of Volcano (every one of config/crd/volcano:
// the scheduler watches most of them) and, for a plane with KServe or its API,
// KServe's (those of its config/crd/full kustomization) from their modules; the
// training operator's come with operator-config.
func (c *Cluster) applyCRDs(ctx context.Context) error {
	var files []string
	vc, err := ModuleDir(ctx, "volcano.sh/volcano", volcanoVersion)
	if err != nil {
		return err
	}
	f, err := crdFiles(filepath.Join(vc, "config", "crd", "volcano", "bases"),
		"scheduling.volcano.sh_podgroups.yaml", "scheduling.volcano.sh_queues.yaml",
		"batch.volcano.sh_jobs.yaml", "batch.volcano.sh_cronjobs.yaml", "bus.volcano.sh_commands.yaml",
		"nodeinfo.volcano.sh_numatopologies.yaml", "topology.volcano.sh_hypernodes.yaml",
		"shard.volcano.sh_nodeshards.yaml", "config.volcano.sh_colocationconfigurations.yaml")
	if err != nil {
		return err
	}
	files = append(files, f...)
	if !c.opts.KServe && !c.opts.KServeAPI {
		return applyFiles(ctx, c.Client, files)
	}
	ks, err := ModuleDir(ctx, "github.com/kserve/kserve", c.opts.KServeVersion)
	if err != nil {
		return err
	}
	// KServe's controller lists ClusterStorageContainers for every storageUri (and panics in
	// v0.19 when the kind is unknown); v0.20 moved their CRD into a folder.
	storageContainers := filepath.Join("clusterstoragecontainer", "serving.kserve.io_clusterstoragecontainers.yaml")
	if c.opts.KServeVersion == KServeKubeflowVersion {
		storageContainers = "serving.kserve.io_clusterstoragecontainers.yaml"
	}
	f, err = crdFiles(filepath.Join(ks, "config", "crd", "full"),
		"serving.kserve.io_inferenceservices.yaml", "serving.kserve.io_servingruntimes.yaml",
		"serving.kserve.io_clusterservingruntimes.yaml", "serving.kserve.io_trainedmodels.yaml",
		"serving.kserve.io_inferencegraphs.yaml", storageContainers)
	if err != nil {
		return err
	}
	files = append(files, f...)
	return applyFiles(ctx, c.Client, files)
}

// applyFiles applies the objects of YAML files (see Apply).
func applyFiles(ctx context.Context, cl client.Client, files []string) error {
	objs, err := DecodeFiles(files...)
	if err != nil {
		return err
	}
	return Apply(ctx, cl, objs...)
}

const (
	volcanoVersion = "v1.15.1"
	// KServeVersion is the test plane's KServe unless Options.KServeVersion names another.
	KServeVersion = "v0.20.0"
	// KServeKubeflowVersion is the KServe that Kubeflow 1.11's manifests install: the serving
	// tier runs against it too (GANGBOOST_KSERVE_VERSION, make test).
	KServeKubeflowVersion = "v0.15.2"
)

// kserveManagers names the controller manager binary of each KServe release the tools build.
var kserveManagers = map[string]string{KServeVersion: "kserve-manager", KServeKubeflowVersion: "kserve-manager-v0.15"}

func (c *Cluster) startControllerManager(ctx context.Context, p *pki) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	proc, err := c.start("kube-controller-manager", c.Binaries["kube-controller-manager"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.Dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + p.SAKey,
		"--root-ca-file=" + p.CACert,
		"--use-service-account-credentials=false",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--cluster-signing-cert-file=" + p.CACert,
		"--cluster-signing-key-file=" + p.CAKey,
		"--concurrent-gc-syncs=5",
		// A claim made with its volume named (testhelpers' CreateClaim, the tests' own) binds
		// at once when the controller sees the volume first, and otherwise at the binder's
		// next periodic sync: 12-13 s of the default 15 s in two of four tries, a wait many
		// tests pay before their first pod. A 1 s sync bounds it.
		"--pvclaimbinder-sync-period=1s",
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, hc, fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	}); err != nil {
		return err
	}
	// The ServiceAccount admission plugin rejects pods until the
	// namespace's default service account exists.
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		_, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// startScheduler runs kube-scheduler for the pods whose schedulerName is
// default-scheduler (KServe's, for one); Volcano's pods are left to Volcano.
func (c *Cluster) startScheduler(ctx context.Context) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	proc, err := c.start("kube-scheduler", c.Binaries["kube-scheduler"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.Dir, "scheduler-certs"),
		"--leader-elect=false",
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, hc, fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
	})
}

// Stop ends every component in reverse start order (pod processes first),
// then removes the run folder unless Options.KeepDir.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.stopRealNode()
		if c.stopRunner != nil {
			c.stopRunner()
			<-c.runnerDone
		}
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].stop(10 * time.Second)
		}
		if c.etcdDir != "" {
			os.RemoveAll(c.etcdDir)
		}
		if c.Dir != "" && !c.opts.KeepDir {
			os.RemoveAll(c.Dir)
		}
	})
}

// PIDs lists the running components by name.
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.Name] = p.PID()
	}
	return out
}

// CheckAlive returns an error naming the first component that has exited.
func (c *Cluster) CheckAlive() error {
	for _, p := range c.procs {
		if exited, err := p.exited(); exited {
			return fmt.Errorf("%s exited: %v\n%s", p.Name, err, tailFile(p.LogPath, 40))
		}
	}
	return nil
}

// LogTails returns the last n lines of every component's log, for test
// failure output.
func (c *Cluster) LogTails(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "===== %s (pid %d) %s =====\n%s\n", p.Name, p.PID(), p.LogPath, tailFile(p.LogPath, n))
	}
	if c.Runner != nil {
		b.WriteString(c.Runner.LogTails(n))
	}
	return b.String()
}

// saKubeconfig writes a kubeconfig that authenticates as a service account
// with a token from the TokenRequest API, so a component runs with exactly
// the RBAC its manifests grant.
func (c *Cluster) saKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	expiry := int64(48 * 3600)
	var tok *authenticationv1.TokenRequest
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		tok, err = c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", namespace, name, err)
	}
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, writeKubeconfig(path, c.Config.Host, c.Config.CAFile, func(a *clientcmdapi.AuthInfo) { a.Token = tok.Status.Token })
}
