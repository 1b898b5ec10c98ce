package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyRBAC creates the objects of manifests/rbac/<file> (a component's ServiceAccount, Role
// and RoleBinding) in namespace, the bindings' subjects moved there too (a ClusterRoleBinding
// named for the namespace; a ClusterRole once): the component gets exactly what the shipped
// manifest grants.
func (c *Cluster) ApplyRBAC(t testing.TB, file, namespace string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "manifests", "rbac", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		o := obj.(client.Object)
		switch x := o.(type) {
		case *rbacv1.ClusterRole:
			// Shared by every namespace's binding: one is enough.
			if err := c.Client.Create(context.Background(), x); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create ClusterRole %s from %s: %v", x.Name, path, err)
			}
			continue
		case *rbacv1.ClusterRoleBinding:
			// One per namespace, for that namespace's service accounts.
			x.Name += "-" + namespace
			for i := range x.Subjects {
				x.Subjects[i].Namespace = namespace
			}
		case *rbacv1.RoleBinding:
			x.Namespace = namespace
			for i := range x.Subjects {
				x.Subjects[i].Namespace = namespace
			}
		default:
			o.SetNamespace(namespace)
		}
		if err := c.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s from %s: %v", o, o.GetName(), path, err)
		}
	}
}

// ServiceAccountKubeconfig writes a kubeconfig holding a token of the service account (from the
// TokenRequest API) with namespace as its context's namespace, so a component run with it has
// only what the account's RBAC grants (a verb its Role lacks fails the component) and defaults
// to that namespace as it would in its pod.
func (c *Cluster) ServiceAccountKubeconfig(t testing.TB, namespace, name string) string {
	t.Helper()
	expiry := int64(3600)
	var tok *authenticationv1.TokenRequest
	WaitFor(t, 90*time.Second, "service account token", func(ctx context.Context) (bool, error) {
		var err error
		tok, err = c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
		return err == nil, err
	})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthority: c.Config.CAFile, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa", Namespace: namespace}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
