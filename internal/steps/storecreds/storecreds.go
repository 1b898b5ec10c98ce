// Package storecreds gives a pipeline step the object store's key pair from object_store_secret,
// a Secret of the step's namespace, when the step reaches a store and its environment has no
// AWS_* credentials: the inputs that name the Secret and its keys, and the one way they are
// applied (prepare-data for s3:// data, evaluate for an s3:// model's metadata).
package storecreds

import (
	"context"
	"fmt"
	"io"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/storesecret"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// Inputs are the inputs that name the Secret and its keys.
var Inputs = []kfp.Input{
	{Name: "object_store_secret", Type: kfp.String, Default: "", Description: "a Secret of the run's namespace holding the store's key pair, which the step reads when it reaches an object store and AWS_ACCESS_KEY_ID is not set (Kubeflow gives each profile mlpipeline-minio-artifact); empty: the environment's credentials or none"},
	{Name: "object_store_access_key_key", Type: kfp.String, Default: storesecret.KubeflowAccessKeyKey, Description: "the Secret's key holding the access key"},
	{Name: "object_store_secret_key_key", Type: kfp.String, Default: storesecret.KubeflowSecretKeyKey, Description: "the Secret's key holding the secret key"},
}

// Reader reads the key pair from a Secret of the step's namespace (storesecret.Read through
// the step's service account).
type Reader func(ctx context.Context, name, accessKeyKey, secretKeyKey string) (*objectstore.Credentials, error)

// Secret is what the inputs name.
type Secret struct{ Name, AccessKeyKey, SecretKeyKey string }

// FromInputs reads the inputs; get reads an input's value, or def.
func FromInputs(get func(name, def string) string) Secret {
	return Secret{Name: get("object_store_secret", ""), AccessKeyKey: get("object_store_access_key_key", storesecret.KubeflowAccessKeyKey),
		SecretKeyKey: get("object_store_secret_key_key", storesecret.KubeflowSecretKeyKey)}
}

// Apply sets cfg's Credentials from the Secret when the step reaches the store at uri (s3:// or
// minio://), a Secret is named and the environment has no credentials; it says which key pair
// reads uri.
func (s Secret) Apply(ctx context.Context, read Reader, uri string, cfg *objectstore.Config, log io.Writer) error {
	if s.Name == "" || !objectstore.IsURI(uri) || cfg.CanSign() {
		return nil
	}
	if read == nil {
		return fmt.Errorf("object_store_secret %s: this step cannot read Secrets here; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead", s.Name)
	}
	creds, err := read(ctx, s.Name, s.AccessKeyKey, s.SecretKeyKey)
	if err != nil {
		return err
	}
	cfg.Credentials = creds
	fmt.Fprintf(log, "reading %s with the key pair of %s\n", uri, creds.From)
	return nil
}
