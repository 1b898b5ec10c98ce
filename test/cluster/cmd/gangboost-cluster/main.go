// Command gangboost-cluster starts the test control plane with gangboost installed, to watch
// gangboost's Kubernetes objects on one machine (make demo-cluster): the Kubernetes API server,
// controller-manager and kube-scheduler, Volcano, the Training Operator with
// --gang-scheduler-name=volcano, KServe's controller, and the pod runner, which runs pods as local
// processes (gangboost-train, gangboost-runtime from bin/). On top it applies what a cluster
// admin would: namespace gangboost, the gangboost-models claim (on a local folder), the
// components' RBAC and the ClusterServingRuntimes.
//
// Where the machine allows a real node (cluster.RealNodeSupport: root, overlayfs, cgroups,
// containerd), it adds one (containerd, kubelet, kube-proxy) and builds gangboost's images from
// bin/ as make images does, imports them there, and taints the fake nodes so that only the
// pods the pod runner runs go to them: the pipeline's steps (prepare-data, launch-xgboostjob,
// deploy-inferenceservice, evaluate), the XGBoostJob's gang and the InferenceService's runtime then
// run on the real node as containers of the gangboost and gangboost-runtime images, the steps as
// uid 65532 with the service account's token the kubelet mounts. It prints which kind of node it
// uses and why.
//
//	gangboost-cluster [--kubeconfig FILE] [--pvc-dir DIR] [--real-node=auto|off] [--pipeline FILE --workdir DIR --param k=v ...] [-- COMMAND ARGS...]
//
// With --pipeline it runs that pipeline package as KFP would on this cluster (make demo-cluster):
// every step a pod in namespace gangboost under the run's service account
// gangboost-pipeline-runner, its executor's command line resolved, the claim at its mount path
// (on the real node a container of the gangboost image; on process nodes as root, which the pod
// runner needs to mount, otherwise each step is a local process with the admin kubeconfig), then
// prints the run's summary and stops. With a command it runs it with
// KUBECONFIG (admin), HTTP_PROXY and GANGBOOST_PVC_DIR set, then stops; with neither it stays up
// until Ctrl-C. The pod runner's processes have no cluster DNS, so
// HTTP_PROXY points at a proxy that sends http://<service>.<namespace>.svc[.cluster.local][:port]
// to the Service's pod (through kube-proxy's ClusterIP when the pod is on the real node), as a
// pod's request to that name would reach it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/kfp/localrun/demo"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/cluster"
	"github.com/gangboost/gangboost/test/cluster/podrunner"
)

const (
	namespace = "gangboost"
	claim     = "gangboost-models"
	// runner is the run's service account, manifests/rbac/pipeline-runner.yaml's.
	runner = "gangboost-pipeline-runner"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gangboost-cluster:", err)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		os.Exit(1)
	}
}

func run() error {
	// Its own flag set: controller-runtime registers a global --kubeconfig.
	fs := flag.NewFlagSet("gangboost-cluster", flag.ExitOnError)
	kubeconfigOut := fs.String("kubeconfig", "", "also copy the admin kubeconfig here")
	pvcDir := fs.String("pvc-dir", "", "folder standing for the gangboost-models claim; default a folder in the run's directory")
	pipeline := fs.String("pipeline", "", "run this pipeline package, each step a pod, then stop")
	workDir := fs.String("workdir", ".demo-cluster", "with --pipeline: the run's folder (pipeline-root/)")
	realNode := fs.String("real-node", "auto", "auto: run the trainer gang and the runtime on a real node where the machine allows it; off: process nodes only")
	var params localrun.ParamFlags
	fs.Var(&params, "param", "with --pipeline: a pipeline parameter, name=value (repeatable)")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	imagesDir, err := os.MkdirTemp("", "gangboost-cluster-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(imagesDir)
	var images *cluster.Images
	whyNoRealNode := errors.New("--real-node=off")
	if *realNode != "off" {
		images, whyNoRealNode = realNodeImages(ctx, imagesDir)
	}
	opts := cluster.Options{
		Nodes:    cluster.TwoGPUNodes(),
		KServe:   true,
		RealNode: whyNoRealNode == nil,
		PodRunner: &podrunner.Options{
			Commands: cluster.GangboostCommands(append([]string{"gangboost-train", "gangboost-runtime"}, cluster.ComponentCommands()...)...),
			// The runtime's pods have no command: the image's entrypoint is gangboost-runtime.
			Images:  map[string][]string{version.Image("gangboost-runtime"): {"gangboost-runtime"}},
			PassEnv: []string{"LD_LIBRARY_PATH"},
		},
	}
	c, err := cluster.Start(ctx, opts)
	if opts.RealNode && errors.Is(err, cluster.ErrNoRealNodes) {
		fmt.Printf("gangboost-cluster: the real node did not start (%v); starting again with process nodes only\n", err)
		whyNoRealNode, opts.RealNode = err, false
		c, err = cluster.Start(ctx, opts)
	}
	if err != nil {
		return err
	}
	defer c.Stop()
	if opts.RealNode {
		if err := useRealNode(ctx, c, images); err != nil {
			return err
		}
	} else {
		fmt.Printf("gangboost-cluster: process nodes only (no real node: %v): every pod, the trainer gang and the runtime too, runs as a local process of bin/\n", whyNoRealNode)
	}

	if *pvcDir == "" {
		*pvcDir = filepath.Join(c.Dir, "pvc", claim)
	}
	if err := install(ctx, c, *pvcDir); err != nil {
		return err
	}
	if opts.RealNode {
		// The trainer's containers run as 65532 and a hostPath volume keeps the host's owners
		// (fsGroup does not apply to it): the claim's folder is theirs, as a provisioner with
		// fsGroup makes it.
		if err := chownTree(*pvcDir, trainerUID); err != nil {
			return err
		}
		params = withDefaults(params, cluster.RealNodePipelineParams)
	}
	if *kubeconfigOut != "" {
		b, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*kubeconfigOut, b, 0o600); err != nil {
			return err
		}
	}
	proxy := c.ServiceProxy
	fmt.Printf("gangboost-cluster: up; KUBECONFIG=%s, claim %s/%s on %s, Service proxy %s, logs in %s\n",
		c.Kubeconfig, namespace, claim, *pvcDir, proxy, c.LogDir)

	if *pipeline != "" {
		return runPipeline(ctx, c, *pipeline, *workDir, *pvcDir, params, opts.RealNode)
	}
	if fs.NArg() == 0 {
		fmt.Println("gangboost-cluster: try `KUBECONFIG=" + c.Kubeconfig + " kubectl get xgboostjobs,podgroups,pods,inferenceservices -A`; Ctrl-C stops it")
		<-ctx.Done()
		return nil
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy,
		"NO_PROXY=127.0.0.1,localhost", "GANGBOOST_PVC_DIR="+*pvcDir)
	if err := cmd.Start(); err != nil {
		return err
	}
	// Ctrl-C reaches the command through the terminal's process group; SIGTERM is passed on.
	go func() {
		<-ctx.Done()
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()
	return cmd.Wait()
}

// install applies what gangboost's users apply: namespace, claim, the components' RBAC and the
// ClusterServingRuntimes (operator-config is the control plane's own).
func install(ctx context.Context, c *cluster.Cluster, pvcDir string) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	// The manifests name no namespace: they go into the one they are applied to.
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	if err := cluster.Apply(ctx, c.Client, ns); err != nil {
		return err
	}
	if err := c.BindLocalPVC(ctx, namespace, claim, pvcDir); err != nil {
		return err
	}
	rbac, err := filepath.Glob(filepath.Join(root, "manifests", "rbac", "*-*.yaml")) // not kustomization.yaml
	if err != nil {
		return err
	}
	objs, err := cluster.DecodeFiles(append(rbac, filepath.Join(root, "manifests", "clusterservingruntime.yaml"))...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterServingRuntime" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetNamespace() == "" {
			o.SetNamespace(namespace)
		}
		// What scripts/in-namespace.sh does: the bindings' subjects are the namespace's accounts.
		if subjects, ok, _ := unstructured.NestedSlice(o.Object, "subjects"); ok {
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = namespace
			}
			_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		}
	}
	return cluster.Apply(ctx, c.Client, objs...)
}

// trainerUID is the user gangboost's images run as.
const trainerUID = 65532

// realNodeImages says whether this machine can run a real node and, if so, builds the images
// the node runs (scripts/build-images.sh on bin/) into dir.
func realNodeImages(ctx context.Context, dir string) (*cluster.Images, error) {
	if err := cluster.RealNodeSupport(); err != nil {
		return nil, err
	}
	im, err := cluster.BuildImages(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("build the images: %w", err)
	}
	return im, nil
}

// useRealNode imports the images into the real node and taints the fake nodes, so that Volcano
// and kube-scheduler place the trainer gang, the runtime and the step pods on the real node.
func useRealNode(ctx context.Context, c *cluster.Cluster, im *cluster.Images) error {
	for _, name := range []string{"gangboost", "gangboost-runtime"} {
		if err := c.ImportImage(ctx, im.Archive(name)); err != nil {
			return err
		}
	}
	if err := c.TaintFakeNodes(ctx); err != nil {
		return err
	}
	fmt.Printf("gangboost-cluster: real node %s (containerd, kubelet, kube-proxy): the XGBoostJob's gang runs there as containers of %s, "+
		"the InferenceService's predictor as a container of %s (images built from bin/ in %s); "+
		"the pipeline's steps as containers of %s; the fake nodes are tainted (%s)\n",
		cluster.RealNodeName, version.Image("gangboost"), version.Image("gangboost-runtime"), im.Took.Round(time.Second), version.Image("gangboost"), cluster.ProcessNodeTaint.Key)
	return nil
}

// chownTree makes dir and everything in it belong to uid (and its group).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
}

// withDefaults adds each parameter of defaults that params (name=value) does not set.
func withDefaults(params []string, defaults map[string]string) []string {
	out := append([]string(nil), params...)
	for _, name := range slices.Sorted(maps.Keys(defaults)) {
		if !slices.ContainsFunc(params, func(p string) bool { return strings.HasPrefix(p, name+"=") }) {
			out = append(out, name+"="+defaults[name])
			fmt.Printf("gangboost-cluster: --param %s=%s (the trainer ranks and the predictor share the real node)\n", name, defaults[name])
		}
	}
	return out
}

// runPipeline runs a pipeline package on the control plane with every step a pod and prints the
// run's summary as make demo does. With a real node the step pods run there as containers of the
// gangboost image; otherwise the pod runner runs them as processes (as root).
func runPipeline(ctx context.Context, c *cluster.Cluster, file, workDir, pvcDir string, params []string, realNode bool) error {
	opts, err := demo.RunOptions(file, params, os.Stdout, false)
	if err != nil {
		return err
	}
	if opts.BinDir, err = repodir.BinDir(); err != nil {
		return err
	}
	opts.Backend, opts.WorkDir, opts.Claims = localrun.BackendKubernetes, workDir, map[string]string{claim: pvcDir}
	if realNode {
		fmt.Printf("gangboost-cluster: each step runs as a pod on the real node %s in %s under service account %s: a container of %s as uid %d\n",
			cluster.RealNodeName, namespace, runner, version.Image("gangboost"), cluster.StepUID)
		opts.Executor = &cluster.StepPods{C: c, Namespace: namespace, ServiceAccount: runner, RealNode: true}
	} else if err := c.PodMounts(); err == nil {
		fmt.Printf("gangboost-cluster: each step runs as a pod in %s under service account %s\n", namespace, runner)
		opts.Executor = &cluster.StepPods{C: c, Namespace: namespace, ServiceAccount: runner}
	} else {
		// A pod's volumes at their mount paths need mount namespaces (root); steps run here with
		// the admin kubeconfig instead.
		fmt.Printf("gangboost-cluster: steps run as local processes with the admin kubeconfig (pods could not mount their volumes: %v)\n", err)
		os.Setenv("KUBECONFIG", c.Kubeconfig)
		os.Setenv("HTTP_PROXY", c.ServiceProxy)
		os.Setenv("HTTPS_PROXY", c.ServiceProxy)
		os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	}
	_, err = localrun.Run(ctx, opts)
	return err
}
