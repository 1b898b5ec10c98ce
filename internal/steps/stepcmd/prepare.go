package stepcmd

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/internal/steps/storecreds"
)

// Prepare is prepare-data: it splits a data set into train.csv, test.csv and schema.json on the
// claim and outputs their paths, the label and a Dataset artifact.
func Prepare(args []string) int {
	return kfp.RunComponent("prepare-data", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return prepare.RunExecutor(ctx, e, prepare.HTTPFetcher{}, secretReader("", ""), os.Stdout)
	})
}

// secretReader reads an object store's key pair from a Secret of namespace (empty: the step's
// own), through the step's service account (in a pod) or kubeconfig (empty: $KUBECONFIG): the
// storecreds.Reader of prepare-data, evaluate and launch-xgboostjob. The configuration is
// loaded only when a Secret is read.
func secretReader(kubeconfig, namespace string) storecreds.Reader {
	return func(ctx context.Context, name, accessKeyKey, secretKeyKey string) (*objectstore.Credentials, error) {
		step := kubecfg.Load(kubeconfig)
		cfg, err := step.RESTConfig()
		if err != nil {
			return nil, err
		}
		ns := namespace
		if ns == "" {
			ns = step.Namespace
		}
		return storesecret.Read(ctx, cfg, storesecret.Ref{Namespace: ns, Name: name, AccessKeyKey: accessKeyKey, SecretKeyKey: secretKeyKey})
	}
}
