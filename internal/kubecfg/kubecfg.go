// Package kubecfg finds the cluster a component step talks to, as kubectl does: the --kubeconfig
// file, else $KUBECONFIG, else the pod's service account; the step's own namespace (the
// kubeconfig context's, or the service account's) is the default for what it creates.
package kubecfg

import (
	"fmt"

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
