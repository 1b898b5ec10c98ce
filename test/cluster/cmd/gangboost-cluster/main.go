// Command gangboost-cluster starts the test control plane with gangboost installed, to watch
// gangboost's Kubernetes objects on one machine (make demo-cluster): the Kubernetes API server,
// controller-manager and kube-scheduler, Volcano, the Training Operator with
// --gang-scheduler-name=volcano, KServe's controller, and the pod runner, which runs pods as local
// processes (gangboost-train, gangboost-runtime from bin/). On top it applies what a cluster
// admin would: namespace gangboost, the gangboost-models claim (on a local folder), the
// components' RBAC and the ClusterServingRuntimes.
//
//	gangboost-cluster [--kubeconfig FILE] [--pvc-dir DIR] [--pipeline FILE --workdir DIR --param k=v ...] [-- COMMAND ARGS...]
//
// With --pipeline it runs that pipeline package as KFP would on this cluster (make demo-cluster):
// every step a pod in namespace gangboost under the run's service account
// gangboost-pipeline-runner, its executor's command line resolved, the claim at its mount path
// (as root, which the pod runner needs to mount; otherwise each step is a local process with the
// admin kubeconfig), then prints the run's summary and stops. With a command it runs it with
// KUBECONFIG (admin), HTTP_PROXY and GANGBOOST_PVC_DIR set, then stops; with neither it stays up
// until Ctrl-C. There is no cluster DNS or kube-proxy here, so
// HTTP_PROXY points at a proxy that sends http://<service>.<namespace>.svc[.cluster.local][:port]
// to the Service's pod on 127.0.0.1, as a pod's request to that name would reach it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

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
	var params localrun.ParamFlags
	fs.Var(&params, "param", "with --pipeline: a pipeline parameter, name=value (repeatable)")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Options{
		Nodes:  cluster.TwoGPUNodes(),
		KServe: true,
		PodRunner: &podrunner.Options{
			Commands: cluster.GangboostCommands("gangboost-train", "gangboost-runtime",
				"prepare-data", "launch-xgboostjob", "deploy-inferenceservice", "evaluate"),
			// The runtime's pods have no command: the image's entrypoint is gangboost-runtime.
			Images:  map[string][]string{version.Image("gangboost-runtime"): {"gangboost-runtime"}},
			PassEnv: []string{"LD_LIBRARY_PATH"},
		},
	})
	if err != nil {
		return err
	}
	defer c.Stop()

	if *pvcDir == "" {
		*pvcDir = filepath.Join(c.Dir, "pvc", claim)
	}
	if err := install(ctx, c, *pvcDir); err != nil {
		return err
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
		return runPipeline(ctx, c, *pipeline, *workDir, *pvcDir, params)
	}
	if fs.NArg() == 0 {
		fmt.Println("gangboost-cluster: try `KUBECONFIG=" + c.Kubeconfig + " kubectl get xgboostjobs,podgroups,pods,inferenceservices -A`; Ctrl-C stops it")
		<-ctx.Done()
		return nil
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "HTTP_PROXY="+proxy,
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

// runPipeline runs a pipeline package on the control plane with every step a pod (as root) and
// prints the run's summary as make demo does.
func runPipeline(ctx context.Context, c *cluster.Cluster, file, workDir, pvcDir string, params []string) error {
	opts, err := demo.RunOptions(file, params, os.Stdout, false)
	if err != nil {
		return err
	}
	if opts.BinDir, err = repodir.BinDir(); err != nil {
		return err
	}
	opts.Backend, opts.WorkDir, opts.Claims = localrun.BackendKubernetes, workDir, map[string]string{claim: pvcDir}
	if err := c.PodMounts(); err == nil {
		fmt.Printf("gangboost-cluster: each step runs as a pod in %s under service account %s\n", namespace, runner)
		opts.Executor = &cluster.StepPods{C: c, Namespace: namespace, ServiceAccount: runner}
	} else {
		// A pod's volumes at their mount paths need mount namespaces (root); steps run here with
		// the admin kubeconfig instead.
		fmt.Printf("gangboost-cluster: steps run as local processes with the admin kubeconfig (pods could not mount their volumes: %v)\n", err)
		os.Setenv("KUBECONFIG", c.Kubeconfig)
		os.Setenv("HTTP_PROXY", c.ServiceProxy)
		os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	}
	_, err = localrun.Run(ctx, opts)
	return err
}
