// Package manifests holds the Kubernetes manifests users apply to serve gangboost models with
// KServe (namespace, model PVC, ClusterServingRuntimes, example InferenceServices), embedded so
// tools can apply exactly what the repository ships.
package manifests

import "embed"

// Files holds every manifest of this folder (*.yaml), and kustomization.yaml, which is what
// `make deploy-runtime` renders (namespace, PVC, ClusterServingRuntimes) and where their image's
// registry is set.
//
//go:embed *.yaml
var Files embed.FS

// Kustomization is the file of Files that is kustomize's, not a Kubernetes object.
const Kustomization = "kustomization.yaml"
