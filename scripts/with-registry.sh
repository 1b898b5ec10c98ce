#!/usr/bin/env bash
# Prints a kustomization of the repository (default manifests/: what `make deploy-runtime` applies,
# the namespace, the model PVC and gangboost's ClusterServingRuntimes; manifests/contention: the
# contention example) with every gangboost image in REGISTRY: an overlay whose images transformer
# repoints both gangboost images from the default registry, rendered with kubectl's built-in
# kustomize (no network).
#
# Usage: scripts/with-registry.sh [REGISTRY [DIR]]   (default $REGISTRY, else ghcr.io/gangboost; DIR manifests)
# Environment: KUBECTL (default kubectl).
set -euo pipefail

registry=${1:-${REGISTRY:-ghcr.io/gangboost}}
registry=${registry%/}
case $registry in
  "" | *://* | *@* | *" "*)
    echo "with-registry: REGISTRY=$registry: want a registry and path such as registry.example.com/ml (no scheme, no digest)" >&2
    exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "$root" && realpath "${2:-manifests}")
if [[ ! -f $dir/kustomization.yaml ]]; then
  echo "with-registry: $dir has no kustomization.yaml; give manifests or manifests/contention" >&2
  exit 2
fi
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
# kustomize takes a base only by a relative path.
base=$(realpath --relative-to="$overlay" "$dir")
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $base
images:
  - name: ghcr.io/gangboost/gangboost-runtime
    newName: $registry/gangboost-runtime
  - name: ghcr.io/gangboost/gangboost
    newName: $registry/gangboost
  - name: ghcr.io/gangboost/gangboost-storage-initializer
    newName: $registry/gangboost-storage-initializer
YAML
"${KUBECTL:-kubectl}" kustomize "$overlay"
