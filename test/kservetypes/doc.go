// Package kservetypes holds the product's KServe-facing code and manifests to KServe's own Go
// types and admission logic: internal/kube/kserveapi against KServe's InferenceService types, the
// ClusterServingRuntimes and example InferenceServices of manifests/ against KServe's decoders,
// validators and runtime selection.
//
// It is its own module because KServe v0.20.0's API packages build only with the libraries KServe
// pins by replace directives (k8s.io v0.34, controller-runtime v0.22: its PodSpec converts to
// k8s.io/api v0.34's, and it and KEDA v2.18 call controller-runtime's pre-v0.23 webhook builder),
// while the product's module is on k8s.io v0.35 and controller-runtime v0.23, which Kubeflow
// Trainer v2.2's API needs. A dependency's replace directives are ignored, so they are copied here.
package kservetypes
