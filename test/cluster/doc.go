// Package cluster starts a real Kubernetes control plane for tests: etcd,
// kube-apiserver and kube-controller-manager, KWOK fake nodes (with
// nvidia.com/gpu capacity), the Volcano scheduler and the Kubeflow training
// operator configured by operator-config/, with the CRDs of the training
// operator, Volcano and KServe installed.
//
// The binaries are built from the Go module proxy by the tools modules in
// test/cluster/tools (one module per upstream project, as their dependency
// graphs differ) into a cache outside the repository, once; see EnsureTools
// and `go run ./test/cluster/cmd/build-tools`. Every component runs as a
// child process in its own process group, logs to Cluster.LogDir, and is
// stopped by PID in Stop (and killed by the kernel should the test binary
// die first).
//
// Tests share one control plane per test binary through Main (in TestMain)
// and Require.
package cluster
