package e2e

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gangboost/gangboost/internal/kube/storesecret"
)

// TestStoreSecretRead: a step reads the object store's key pair from a Secret of its namespace,
// and each way that fails says what to create or grant: no such Secret, a Secret without the
// keys (naming those it has), a service account that may not read Secrets.
func TestStoreSecretRead(t *testing.T) {
	e := newEnv(t, "storesecret")
	ctx := context.Background()
	ref := storesecret.Ref{Namespace: e.ns, Name: storesecret.KubeflowSecret, AccessKeyKey: storesecret.KubeflowAccessKeyKey, SecretKeyKey: storesecret.KubeflowSecretKeyKey}

	_, err := storesecret.Read(ctx, e.c.Config, ref)
	for _, want := range []string{"Secret " + e.ns + "/mlpipeline-minio-artifact does not exist", `"accesskey"`, `"secretkey"`, "object_store_secret"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no Secret: %v; want it to say %q", err, want)
		}
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: e.ns},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("k"), "AWS_SECRET_ACCESS_KEY": []byte("s")}}
	if err := e.c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	_, err = storesecret.Read(ctx, e.c.Config, ref)
	for _, want := range []string{`no value under "accesskey" and "secretkey"`, "its keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY", "object_store_access_key_key"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("other keys: %v; want it to say %q", err, want)
		}
	}
	got, err := storesecret.Read(ctx, e.c.Config, storesecret.Ref{Namespace: e.ns, Name: ref.Name, AccessKeyKey: "AWS_ACCESS_KEY_ID", SecretKeyKey: "AWS_SECRET_ACCESS_KEY"})
	if err != nil || got.AccessKey != "k" || got.SecretKey != "s" || got.From != "Secret "+e.ns+"/"+ref.Name {
		t.Errorf("named keys: %+v, %v", got, err)
	}

	// A service account with no grants (the namespace's default).
	tok, err := e.c.Kube.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unprivileged := rest.AnonymousClientConfig(e.c.Config)
	unprivileged.BearerToken = tok.Status.Token
	_, err = storesecret.Read(ctx, unprivileged, ref)
	for _, want := range []string{"may not read Secret " + e.ns + "/mlpipeline-minio-artifact", "grant it get on secrets in " + e.ns} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no grant: %v; want it to say %q", err, want)
		}
	}
}
