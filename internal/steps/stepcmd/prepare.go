package stepcmd

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/prepare"
)

// Prepare is prepare-data: it splits a data set into train.csv, test.csv and schema.json on the
// claim and outputs their paths, the label and a Dataset artifact.
func Prepare(args []string) int {
	return kfp.RunComponent("prepare-data", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return prepare.RunExecutor(ctx, e, prepare.HTTPFetcher{}, readStepSecret, os.Stdout)
	})
}

// readStepSecret reads an object store's key pair from a Secret of the step's namespace, through
// the step's service account (in a pod) or $KUBECONFIG: the storecreds.Reader of prepare-data and
// evaluate.
func readStepSecret(ctx context.Context, name, accessKeyKey, secretKeyKey string) (*objectstore.Credentials, error) {
	step := kubecfg.Load("")
	cfg, err := step.RESTConfig()
	if err != nil {
		return nil, err
	}
	return storesecret.Read(ctx, cfg, storesecret.Ref{Namespace: step.Namespace, Name: name, AccessKeyKey: accessKeyKey, SecretKeyKey: secretKeyKey})
}
