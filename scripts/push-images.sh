#!/usr/bin/env bash
# Pushes each image's manifest list that scripts/build-images.sh left in the buildah store
# ($REGISTRY/<name>:<VERSION>-multiarch) to $REGISTRY/<name>:<VERSION> with every architecture it
# lists, as an OCI image index: a node pulls the image of its own architecture by the one name the
# manifests and component specs carry.
#
# Environment: VERSION (default: the VERSION file), REGISTRY (default ghcr.io/gangboost),
# BUILDAH_STORAGE (extra global buildah flags, as for build-images.sh), PUSH_TO (where the names
# go, default docker://$REGISTRY; e.g. oci:DIR for an OCI layout per image under DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(cat VERSION)}
REGISTRY=${REGISTRY:-ghcr.io/gangboost}
read -r -a S <<< "${BUILDAH_STORAGE:-}"
PUSH_TO=${PUSH_TO:-docker://$REGISTRY}
for name in gangboost-runtime gangboost-storage-initializer gangboost; do
  list="$REGISTRY/$name:$VERSION-multiarch"
  if ! platforms=$(buildah "${S[@]}" manifest inspect "$list" 2>/dev/null | jq -r '[.manifests[].platform | .os + "/" + .architecture] | join(", ")'); then
    echo "push-images: no manifest list $list in the buildah store: make images REGISTRY=$REGISTRY first" >&2
    exit 1
  fi
  echo "buildah manifest push --all $list $PUSH_TO/$name:$VERSION ($platforms)"
  buildah "${S[@]}" manifest push --all --quiet --format oci "$list" "$PUSH_TO/$name:$VERSION"
done
