package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

// The cluster's nodes: KWOK keeps the fake nodes' status and leases, and the pod runner
// runs, as processes, the pods bound to them. The control plane is in cluster.go.

// NodeSpec is one fake node.
type NodeSpec struct {
	Name   string
	CPU    string // e.g. "8"
	Memory string // e.g. "32Gi"
	GPUs   int64  // nvidia.com/gpu capacity
	Labels map[string]string
}

// kwokConfig keeps KWOK to nodes: its default node stages (initialize,
// lease heartbeat) run, and a single pod stage that matches no pod stands in
// for its default pod stages, so pod status belongs to the pod runner alone.
const kwokConfig = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-left-to-runner
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.name'
      operator: 'In'
      values:
      - ''
  next:
    statusTemplate: ""
`

func (c *Cluster) startKWOKAndNodes(ctx context.Context) error {
	cfgPath := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(cfgPath, []byte(kwokConfig), 0o644); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	proc, err := c.start("kwok", c.Binaries["kwok"], []string{
		"--config=" + cfgPath,
		"--kubeconfig=" + c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
		"--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=40",
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
		// What the nodes' status names as their kubelet's port: the pod runner's log endpoint.
		fmt.Sprintf("--node-port=%d", c.kubeletPort),
	}, nil)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 30*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	}); err != nil {
		return err
	}
	for _, n := range c.opts.Nodes {
		if err := c.AddNode(ctx, n); err != nil {
			return err
		}
	}
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		for _, n := range c.opts.Nodes {
			if err := nodeSchedulable(ctx, c.Kube, n.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddNode registers a fake node; KWOK marks it Ready and the node lifecycle
// controller then lifts its not-ready taint.
func (c *Cluster) AddNode(ctx context.Context, n NodeSpec) error {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if n.GPUs > 0 {
		res[GPUResource] = *resource.NewQuantity(n.GPUs, resource.DecimalSI)
	}
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{FakeNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		// Node status is accepted on create: a kubelet registers its
		// capacity the same way.
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	c.Nodes = append(c.Nodes, n.Name)
	return nil
}

// ProcessNodeTaint reserves the fake nodes for the pods meant to run as local processes (the
// pipeline's step pods, which tolerate it: ProcessNodeToleration) when a real node runs the
// rest: Volcano and kube-scheduler then place every other pod, the trainer gangs and KServe's
// predictors, on the real node, as containers of their images.
var ProcessNodeTaint = corev1.Taint{Key: "gangboost.dev/process-node", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// ProcessNodeToleration tolerates ProcessNodeTaint.
var ProcessNodeToleration = corev1.Toleration{Key: ProcessNodeTaint.Key, Operator: corev1.TolerationOpEqual,
	Value: ProcessNodeTaint.Value, Effect: ProcessNodeTaint.Effect}

// RealNodePipelineParams are the pipeline package's resource parameters for a run whose trainer
// gang and predictor share the real node, which has this machine's CPUs (2 on a small VM): the
// default of 1 CPU for each of 3 ranks would not fit it, and Volcano would keep the gang waiting.
var RealNodePipelineParams = map[string]string{"cpu": "400m", "memory": "512Mi", "serving_cpu": "250m", "serving_memory": "256Mi"}

// TaintFakeNodes puts ProcessNodeTaint on every fake node.
func (c *Cluster) TaintFakeNodes(ctx context.Context) error {
	for _, name := range c.Nodes {
		if name == RealNodeName {
			continue
		}
		// A strategic merge patch adds the taint by its key, whatever KWOK writes meanwhile.
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": []corev1.Taint{ProcessNodeTaint}}})
		if err != nil {
			return err
		}
		if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("taint node %s: %w", name, err)
		}
	}
	return nil
}

// RemoveNode deletes a fake node added with AddNode.
func (c *Cluster) RemoveNode(ctx context.Context, name string) error {
	err := c.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n string) bool { return n == name })
	return nil
}

func nodeSchedulable(ctx context.Context, kube kubernetes.Interface, name string) error {
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return fmt.Errorf("node %s not Ready", name)
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return fmt.Errorf("node %s has taint %s:%s", name, t.Key, t.Effect)
		}
	}
	return nil
}

// WaitNodesSchedulable waits until every fake node is Ready and untainted.
func (c *Cluster) WaitNodesSchedulable(ctx context.Context, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range c.Nodes {
			if nodeSchedulable(ctx, c.Kube, n) != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// startRunner starts the pod runner on the fake nodes.
func (c *Cluster) startRunner(o podrunner.Options) error {
	if o.Log == nil {
		o.Log = c.opts.Log
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(c.LogDir, "pods")
	}
	if o.WorkDir == "" {
		o.WorkDir = filepath.Join(c.Dir, "pods")
	}
	if o.NodeSelector == nil {
		o.NodeSelector = func(n *corev1.Node) bool { return n.Annotations[FakeNodeAnnotation] == "fake" }
	}
	if o.APIServer == "" {
		u, err := url.Parse(c.Config.Host)
		if err != nil {
			return err
		}
		o.APIServer = u.Host
	}
	// Where mount namespaces work (root) each container gets its volumes at their mount paths,
	// as in a real pod: the service-account token where rest.InClusterConfig looks, a claim
	// where a component's ExecutorInput names it. Tests that need it call RequirePodMounts.
	if err := podrunner.MountNamespaces(); err == nil {
		o.MountVolumes = true
	} else {
		c.mountsErr = err
		fmt.Fprintf(c.opts.Log, "cluster: pods run without their own mount namespaces: %v\n", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if o.HTTPProxy == "" {
		proxy, err := ServiceProxy(ctx, c.Kube)
		if err != nil {
			cancel()
			return err
		}
		c.ServiceProxy = "http://" + proxy
		o.HTTPProxy = c.ServiceProxy
	}
	if o.LogServer == "" {
		o.LogServer = fmt.Sprintf("127.0.0.1:%d", c.kubeletPort)
		o.LogServerCert, o.LogServerKey = c.servingCert, c.servingKey
	}
	r, err := podrunner.New(c.Kube, o)
	if err != nil {
		cancel()
		return err
	}
	c.Runner, c.stopRunner, c.runnerDone = r, cancel, make(chan struct{})
	go func() {
		defer close(c.runnerDone)
		if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(c.opts.Log, "pod runner stopped: %v\n", err)
		}
	}()
	return r.WaitStarted(context.Background(), 30*time.Second)
}
