#!/usr/bin/env bash
# Checks that a model is on the claim before an InferenceService is made to serve it (make
# deploy-example): without it the predictor never gets Ready and the only sign is a timeout.
# A short-lived pod in NAMESPACE mounts the claim of STORAGE_URI (pvc://<claim>/<path>) read-only
# and runs `gangboost-runtime --check` on <path>, which loads the model as the predictor will
# (the same discovery, parsing and sha256 check against metadata.json). The pod runs the image the
# ClusterServingRuntime RUNTIME names, so it also proves the predictor's image can be pulled. It
# carries no Istio sidecar (a pod with one never completes) and fits the restricted Pod Security
# Standard of Kubeflow's profile namespaces.
#
# usage: scripts/check-model.sh NAMESPACE pvc://CLAIM/PATH MODEL_NAME [RUNTIME]
# Environment: KUBECTL (default kubectl), CHECK_TIMEOUT seconds (default 180).
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
[[ $# -ge 3 ]] || { echo "usage: $0 NAMESPACE pvc://CLAIM/PATH MODEL_NAME [RUNTIME]" >&2; exit 2; }
ns=$1 uri=$2 model=$3 runtime=${4:-gangboost-xgboost}
if [[ $uri != pvc://?*/?* ]]; then
  echo "check-model: storageUri $uri is not pvc://<claim>/<path>" >&2
  exit 2
fi
rest=${uri#pvc://}
claim=${rest%%/*} path=${rest#*/}
# A pipeline run writes models/<model_name>/<model_version> on its claim (pvc_name).
run_first="Run the pipeline first (README \"From the Kubeflow Pipelines UI\") with pvc_name=$claim and the model_name and model_version of $path, then make deploy-example again."
if [[ $path =~ ^models/([^/]+)/([^/]+)/?$ ]]; then
  run_first="Run the pipeline first (README \"From the Kubeflow Pipelines UI\") with pvc_name=$claim model_name=${BASH_REMATCH[1]} model_version=${BASH_REMATCH[2]}, then make deploy-example again."
fi

image=$($KUBECTL get clusterservingruntime "$runtime" -o jsonpath='{.spec.containers[0].image}' 2>/dev/null || true)
if [[ -z $image ]]; then
  echo "check-model: no ClusterServingRuntime $runtime to serve the model: run make deploy-runtime first" >&2
  exit 1
fi
if ! $KUBECTL -n "$ns" get pvc "$claim" >/dev/null; then
  echo "check-model: no claim $claim in namespace $ns: run make deploy-runtime NAMESPACE=$ns, then the pipeline" >&2
  exit 1
fi

pod=$($KUBECTL -n "$ns" create -o name -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  generateName: gangboost-model-check-
  labels:
    app.kubernetes.io/part-of: gangboost
    app.kubernetes.io/component: model-check
  annotations:
    sidecar.istio.io/inject: "false"
spec:
  restartPolicy: Never
  activeDeadlineSeconds: ${CHECK_TIMEOUT:-180}
  automountServiceAccountToken: false
  securityContext:
    runAsNonRoot: true
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: check
    image: "$image"
    args: ["--check", "--model_name", "$model", "--model_dir", "/mnt/pvc/$path"]
    resources:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {cpu: "1", memory: 1Gi}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: [ALL]
    volumeMounts:
    - name: claim
      mountPath: /mnt/pvc
      readOnly: true
  volumes:
  - name: claim
    persistentVolumeClaim:
      claimName: "$claim"
      readOnly: true
YAML
)
trap '$KUBECTL -n "$ns" delete "$pod" --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT
echo "check-model: $pod looks for the model at $uri (image $image)"

deadline=$((SECONDS + ${CHECK_TIMEOUT:-180}))
while :; do
  phase=$($KUBECTL -n "$ns" get "$pod" -o jsonpath='{.status.phase}')
  case $phase in
    Succeeded)
      $KUBECTL -n "$ns" logs "$pod"
      exit 0 ;;
    Failed)
      echo "check-model: no model to serve at $uri; gangboost-runtime --check says:" >&2
      $KUBECTL -n "$ns" logs "$pod" >&2 || true
      echo "$run_first" >&2
      exit 1 ;;
  esac
  if ((SECONDS >= deadline)); then
    echo "check-model: $pod still $phase after ${CHECK_TIMEOUT:-180}s (is claim $claim bound, image $image pullable?); its events:" >&2
    $KUBECTL -n "$ns" get events --field-selector "involvedObject.name=${pod#pod/}" >&2 || true
    exit 1
  fi
  sleep 2
done
