package stepcmd

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/steps/deploy"
	"github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/internal/steps/promote"
)

// Promote is promote-model: it applies evaluate's verdict to the InferenceService deploy
// deployed the model into (or, with GANGBOOST_BACKEND=local, to the local runtime processes) and
// writes promoted, serving_model_uri and previous_model_uri.
func Promote(args []string) int {
	var kubeconfig *string
	flags := func(fs *flag.FlagSet) {
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; default $KUBECONFIG, else the in-cluster service account")
	}
	return kfp.RunComponent("promote-model", args, flags, func(ctx context.Context, e *kfp.Executor) error {
		return promoteModel(ctx, e, *kubeconfig)
	})
}

func promoteModel(ctx context.Context, exec *kfp.Executor, kubeconfig string) error {
	var backend deploy.Backend
	var req *promote.Request
	var err error
	if kfp.LocalBackend() {
		if req, err = promote.RequestFromExecutor(exec, "local"); err != nil {
			return err
		}
		if backend, err = localServingBackend(); err != nil {
			return err
		}
	} else {
		step := kubecfg.Load(kubeconfig)
		if req, err = promote.RequestFromExecutor(exec, step.Namespace); err != nil {
			return err
		}
		cfg, err := step.RESTConfig()
		if err != nil {
			return err
		}
		if backend, err = kube.New(cfg); err != nil {
			return err
		}
	}
	p, ok := backend.(deploy.Promoter)
	if !ok {
		if req.ChampionModelURI != "" {
			return fmt.Errorf("the serving backend cannot promote a challenger (champion %s)", req.ChampionModelURI)
		}
		// Deploy rolled the model out directly: it is what serves.
		return promote.WriteOutputs(exec, &promote.Result{Promoted: true, ServingModelURI: req.Service.ModelURI})
	}
	res, err := promote.Run(ctx, p, *req, os.Stdout)
	if err != nil {
		return err
	}
	return promote.WriteOutputs(exec, res)
}
