// Package realnode tests the test control plane's real node (cluster.Options.RealNode): a
// kubelet, kube-proxy and containerd that run pods as containers of their images, with the
// security contexts, claims and probes the manifests set, and that leave nothing on the host
// when the control plane stops.
package realnode
