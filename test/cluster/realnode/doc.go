// Package realnode tests the test control plane's real node (cluster.Options.RealNode): a
// kubelet, kube-proxy and containerd that run pods as containers of their images, with the
// security contexts, claims and probes the manifests set: an XGBoostJob and a Trainer v2
// TrainJob train as gangs of the gangboost image under Volcano, KServe's controller serves the
// trained model with the runtime image, and the control plane leaves nothing on the host when it
// stops.
package realnode
