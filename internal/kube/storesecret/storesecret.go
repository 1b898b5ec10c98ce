// Package storesecret reads an object store's access key pair from a Secret of the step's own
// namespace, as Kubeflow Pipelines' launcher reads the namespace's mlpipeline-minio-artifact: a
// step needs no secret-as-env entry in the pipeline's platform spec (whose pinned form names a
// Secret only as a constant), and a Secret that is missing, unreadable or lacks a key gets a
// message that says what to create or grant.
package storesecret

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// KubeflowSecret is the Secret Kubeflow Pipelines gives each profile namespace for its object
// store, and its keys.
const (
	KubeflowSecret       = "mlpipeline-minio-artifact"
	KubeflowAccessKeyKey = "accesskey"
	KubeflowSecretKeyKey = "secretkey"
)

// Ref names a Secret of the step's namespace and its keys holding the access key and the secret
// key.
type Ref struct {
	Namespace, Name            string
	AccessKeyKey, SecretKeyKey string
}

// Read reads the Secret ref names through cfg and returns its key pair.
func Read(ctx context.Context, cfg *rest.Config, ref Ref) (*objectstore.Credentials, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	what := "Secret " + ref.Namespace + "/" + ref.Name
	s, err := cs.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("object_store_secret: %s does not exist: create it with the store's access key under %q and secret key under %q (Kubeflow creates %s in each profile namespace), or name another with object_store_secret",
			what, ref.AccessKeyKey, ref.SecretKeyKey, KubeflowSecret)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("object_store_secret: the step's service account may not read %s (%v): grant it get on secrets in %s (Kubeflow's kubeflow-edit does, through kubeflow-kubernetes-edit)",
			what, err, ref.Namespace)
	case err != nil:
		return nil, fmt.Errorf("object_store_secret: read %s: %w", what, err)
	}
	var missing []string
	for _, k := range []string{ref.AccessKeyKey, ref.SecretKeyKey} {
		if len(s.Data[k]) == 0 {
			missing = append(missing, fmt.Sprintf("%q", k))
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(s.Data))
		for k := range s.Data {
			have = append(have, k)
		}
		slices.Sort(have)
		return nil, fmt.Errorf("object_store_secret: %s has no value under %s (its keys: %s): set object_store_access_key_key and object_store_secret_key_key to its keys",
			what, strings.Join(missing, " and "), strings.Join(have, ", "))
	}
	return &objectstore.Credentials{AccessKey: string(s.Data[ref.AccessKeyKey]), SecretKey: string(s.Data[ref.SecretKeyKey]), From: what}, nil
}
