package stepcmd

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
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
	var req *promote.Request
	backend, err := servingBackend(kubeconfig, func(namespace string) (err error) {
		req, err = promote.RequestFromExecutor(exec, namespace)
		return err
	})
	if err != nil {
		return err
	}
	if kb, ok := backend.(*kube.Backend); ok {
		kb.PromotionDrain = req.Drain
	}
	res, err := promote.Run(ctx, backend, *req, os.Stdout)
	if err != nil {
		return err
	}
	// Without a registry nothing is recorded; evaluate, the run's first step that registers,
	// has said so.
	if err := promote.RecordServing(ctx, *req, res, os.Stdout); err != nil {
		return fmt.Errorf("%s serves %s, but the registry does not say so: %w", req.Service.Name, res.ServingModelURI, err)
	}
	return promote.WriteOutputs(exec, res)
}
