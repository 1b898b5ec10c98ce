// Empty stand-in for k8s.io/sample-cli-plugin. k8s.io/kubernetes lists it in its
// module graph, but the Go module proxy does not serve its releases, and no
// binary built here imports it.
module k8s.io/sample-cli-plugin

go 1.23
