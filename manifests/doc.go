// Package manifests holds the Kubernetes manifests users apply to serve gangboost models with
// KServe (namespace, model PVC, ClusterServingRuntimes, example InferenceServices), embedded so
// tools can apply exactly what the repository ships.
package manifests

import "embed"

// Files holds every manifest of this folder (*.yaml), as applied with `kubectl apply -f manifests/`.
//
//go:embed *.yaml
var Files embed.FS
