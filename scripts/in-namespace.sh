#!/usr/bin/env bash
# Prints a kustomization of the repository (default manifests/rbac) rendered into NAMESPACE: every
# namespaced object, and every ServiceAccount subject of a RoleBinding or ClusterRoleBinding that
# names no namespace, goes to NAMESPACE. kustomize's plain `namespace:` field leaves
# ClusterRoleBinding subjects alone, so this overlay uses the NamespaceTransformer with
# setRoleBindingSubjects; rendered with kubectl's built-in kustomize (no network).
#
# Usage: scripts/in-namespace.sh NAMESPACE [DIR]   (DIR default manifests/rbac)
# Environment: KUBECTL (default kubectl).
set -euo pipefail

ns=${1:-}
if [[ ! $ns =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]]; then
  echo "in-namespace: NAMESPACE=\"$ns\": want a namespace name (a DNS-1123 label), e.g. your Kubeflow profile's" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "$root" && realpath "${2:-manifests/rbac}")
if [[ ! -f $dir/kustomization.yaml ]]; then
  echo "in-namespace: $dir has no kustomization.yaml" >&2
  exit 2
fi
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
base=$(realpath --relative-to="$overlay" "$dir")
cat >"$overlay/namespace.yaml" <<YAML
apiVersion: builtin
kind: NamespaceTransformer
metadata:
  name: gangboost-namespace
  namespace: $ns
setRoleBindingSubjects: allServiceAccounts
unsetOnly: true
YAML
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $base
transformers:
  - namespace.yaml
YAML
"${KUBECTL:-kubectl}" kustomize "$overlay"
