// Package kubecfg finds the cluster a component step talks to, as kubectl does: the --kubeconfig
// file, else $KUBECONFIG, else the pod's service account; the step's own namespace (the
// kubeconfig context's, or the service account's) is the default for what it creates.
package kubecfg

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Step is a step's view of its cluster. Loading it contacts nothing, so a step checks its inputs
// (which may need Namespace) before it reaches the cluster.
type Step struct {
	cc clientcmd.ClientConfig
	// Namespace is the step's own namespace; empty when neither a context nor a service account
	// names one.
	Namespace string
}

// Load reads the configuration; explicitPath is the --kubeconfig flag (empty: the defaults).
func Load(explicitPath string) *Step {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicitPath
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	ns, _, err := cc.Namespace()
	if err != nil {
		ns = ""
	}
	return &Step{cc: cc, Namespace: ns}
}

// RESTConfig is the client configuration, with an error that says how to provide one.
func (s *Step) RESTConfig() (*rest.Config, error) {
	cfg, err := s.cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes config (set --kubeconfig or run in a pod with a service account): %w", err)
	}
	return cfg, nil
}

// Scheme is client-go's scheme (core types) plus the API types adds registers (XGBoostJob,
// PodGroup, InferenceService...).
func Scheme(adds ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, adds...) {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

var quietLogger sync.Once

// Client is a typed controller-runtime client of the cluster of cfg (no cache: every read goes
// to the API server) for the types of s.
func Client(cfg *rest.Config, s *runtime.Scheme) (client.Client, error) {
	quietLogger.Do(func() {
		// controller-runtime logs the API server's warnings (a deprecated API, a field the server
		// dropped) through its global logger; unset, it prints a stack trace saying so instead of
		// the warning. The steps have no other use for it: warnings go to stderr as lines.
		ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))
	})
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}
