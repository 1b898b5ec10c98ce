#!/usr/bin/env bash
# Prints what `make deploy-runtime` applies from manifests/ (kustomization.yaml: the namespace, the
# model PVC and gangboost's ClusterServingRuntimes) with both runtimes' image in REGISTRY: an
# overlay whose images transformer repoints ghcr.io/gangboost/gangboost-runtime, rendered with
# kubectl's built-in kustomize (no network).
#
# Usage: scripts/runtime-manifests.sh [REGISTRY]   (default $REGISTRY, else ghcr.io/gangboost)
# Environment: KUBECTL (default kubectl).
set -euo pipefail

registry=${1:-${REGISTRY:-ghcr.io/gangboost}}
registry=${registry%/}
case $registry in
  "" | *://* | *@* | *" "*)
    echo "runtime-manifests: REGISTRY=$registry: want a registry and path such as registry.example.com/ml (no scheme, no digest)" >&2
    exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
# kustomize takes a base only by a relative path.
base=$(realpath --relative-to="$overlay" "$root/manifests")
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $base
images:
  - name: ghcr.io/gangboost/gangboost-runtime
    newName: $registry/gangboost-runtime
YAML
"${KUBECTL:-kubectl}" kustomize "$overlay"
