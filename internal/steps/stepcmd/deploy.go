package stepcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/internal/steps/deploy/local"
)

// Deploy is deploy-inferenceservice: it serves model_uri as a KServe InferenceService (or, with
// GANGBOOST_BACKEND=local, a local gangboost-runtime process), waits until it is Ready and
// writes url, external_url, grpc_address and model_name.
func Deploy(args []string) int {
	var kubeconfig *string
	flags := func(fs *flag.FlagSet) {
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; default $KUBECONFIG, else the in-cluster service account")
	}
	return kfp.RunComponent("deploy-inferenceservice", args, flags, func(ctx context.Context, e *kfp.Executor) error {
		return deployModel(ctx, e, *kubeconfig)
	})
}

func deployModel(ctx context.Context, exec *kfp.Executor, kubeconfig string) error {
	var svc *deploy.Service
	backend, err := servingBackend(kubeconfig, func(namespace string) (err error) {
		svc, err = deploy.ServiceFromExecutor(exec, namespace)
		return err
	})
	if err != nil {
		return err
	}
	if err := svc.ReadModelSHA256(ctx); err != nil {
		return err
	}
	d := &deploy.Deployer{Backend: backend, Log: os.Stdout}
	r, err := d.Deploy(ctx, svc)
	if err != nil {
		return err
	}
	if err := deploy.WriteOutputs(exec, r); err != nil {
		return err
	}
	if r.Challenger != nil {
		fmt.Printf("%s serves %s; challenger %s (%s) answers at %s\n", svc.Name, r.ChampionModelURI, r.Challenger.Name, svc.ModelURI, r.URL)
		return nil
	}
	fmt.Printf("%s serves %s at %s\n", svc.Name, svc.ModelURI, r.URL)
	return nil
}

// servingBackend is the serving backend a deploy or promote step acts through: with
// GANGBOOST_BACKEND=local the local processes (localServingBackend), else the cluster of
// kubeconfig. readInputs reads the step's inputs, given the namespace they default to (the
// step's own; "local" locally), before anything is contacted, so bad inputs fail first.
func servingBackend(kubeconfig string, readInputs func(namespace string) error) (deploy.Promoter, error) {
	if kfp.LocalBackend() {
		if err := readInputs("local"); err != nil {
			return nil, err
		}
		return localServingBackend()
	}
	step := kubecfg.Load(kubeconfig)
	if err := readInputs(step.Namespace); err != nil {
		return nil, err
	}
	cfg, err := step.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kube.New(cfg)
}

// localServingBackend is the local serving backend: gangboost-runtime from $GANGBOOST_BIN_DIR
// (default <repo>/bin, repodir.BinDir), processes recorded in $GANGBOOST_LOCAL_STATE.
func localServingBackend() (*local.Backend, error) {
	binDir, err := repodir.BinDir()
	if err != nil {
		return nil, err
	}
	state := os.Getenv(kfp.EnvLocalState)
	if state == "" {
		return nil, errors.New("GANGBOOST_BACKEND=local needs GANGBOOST_LOCAL_STATE: the folder where the served process is recorded (the local runner sets it)")
	}
	return &local.Backend{Runtime: filepath.Join(binDir, "gangboost-runtime"), StateDir: state}, nil
}
