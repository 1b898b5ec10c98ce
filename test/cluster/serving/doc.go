// Package serving checks what KServe's controller makes of the gangboost
// ClusterServingRuntimes and InferenceServices of manifests/: KServe v0.19
// in RawDeployment mode with its webhooks, kube-scheduler placing the
// predictor pods, and the pod runner running them as gangboost-runtime
// processes whose readiness probes decide when an InferenceService is Ready.
// The deploy-inferenceservice component runs here too, as KFP would run it,
// with the service account and Role of manifests/rbac.
package serving
