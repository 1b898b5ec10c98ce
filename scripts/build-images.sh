#!/usr/bin/env bash
# Builds gangboost's two images without a Docker daemon and without pulling a base image (no
# registry is needed; Debian's apt mirror is), from binaries already built on the host (make build):
#   gangboost-runtime  FROM scratch: the static runtime, /etc/passwd and /etc/group with the
#                      nonroot user 65532; nothing else, so a read-only root file system suits it
#   gangboost          a root made of Debian packages (libxgboost and the libraries it links,
#                      no shell, no package manager) with gangboost-train and gangboost-components,
#                      linked as each pipeline component's command
# Each carries OCI labels and a file list of what it was made from (/usr/share/gangboost/sbom.txt:
# the .deb names and versions, and the Go modules of every binary). Writes OCI archives to
# $DIST (default dist/) and prints each image's size and build time.
#
# Environment: VERSION (default: the VERSION file), REGISTRY (default ghcr.io/gangboost),
# GANGBOOST_BIN_DIR (default bin/), DIST, BUILDAH_STORAGE (extra global buildah flags, e.g.
# "--root DIR --runroot DIR" for a private store).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(cat VERSION)}
REGISTRY=${REGISTRY:-ghcr.io/gangboost}
BIN=${GANGBOOST_BIN_DIR:-$PWD/bin}
DIST=${DIST:-$PWD/dist}
read -r -a S <<< "${BUILDAH_STORAGE:-}"
SOURCE=https://github.com/gangboost/gangboost
# The Debian packages the trainer's root is made of: libxgboost and what it and the binary link.
DEBS=(libxgboost0 libdmlc0 libgomp1 libstdc++6 libgcc-s1 libc6 gcc-12-base)
# The components' commands: links to gangboost-components, which runs the one its name says.
COMPONENTS=(launch-xgboostjob deploy-inferenceservice evaluate prepare-data)

command -v buildah >/dev/null || { echo "buildah is missing: apt-get install -y buildah" >&2; exit 1; }
mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# users writes /etc/passwd and /etc/group into root $1 with root and nonroot (65532), the uid
# Kubernetes' runAsNonRoot checks numerically.
users() {
  mkdir -p "$1/etc"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$1/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$1/etc/group"
  mkdir -p "$1/home/nonroot" "$1/tmp"
  chmod 1777 "$1/tmp"
}

# gomods appends the Go modules of binary $1 to file $2.
gomods() { echo "# $(basename "$1")" >>"$2"; go version -m "$1" | awk '$1 == "dep" || $1 == "mod" {print $2, $3}' >>"$2"; }

# commit makes image $2 from root folder $1 with the given config and writes its OCI archive.
commit() {
  local root=$1 name=$2 ref="$REGISTRY/$2:$VERSION"; shift 2
  local start=$SECONDS ctr
  ctr=$(buildah "${S[@]}" from scratch)
  buildah "${S[@]}" copy --quiet "$ctr" "$root/" / >/dev/null
  buildah "${S[@]}" config --user 65532:65532 --workingdir /home/nonroot \
    --env PATH=/usr/local/bin:/usr/bin:/bin \
    --label org.opencontainers.image.title="$name" \
    --label org.opencontainers.image.version="$VERSION" \
    --label org.opencontainers.image.source="$SOURCE" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label org.opencontainers.image.created="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$@" "$ctr"
  buildah "${S[@]}" commit --quiet --rm --format oci "$ctr" "$ref" >/dev/null
  rm -f "$DIST/$name-$VERSION.tar"
  buildah "${S[@]}" push --quiet "$ref" "oci-archive:$DIST/$name-$VERSION.tar:$ref"
  echo "image $ref: $(du -h "$DIST/$name-$VERSION.tar" | cut -f1) as an OCI archive, built in $((SECONDS - start))s"
}

# gangboost-runtime: the static binary and the users, nothing else.
rt="$work/runtime"
users "$rt"
install -D -m 0755 "$BIN/gangboost-runtime" "$rt/usr/local/bin/gangboost-runtime"
mkdir -p "$rt/usr/share/gangboost"
gomods "$BIN/gangboost-runtime" "$rt/usr/share/gangboost/sbom.txt"
commit "$rt" gangboost-runtime \
  --entrypoint '["/usr/local/bin/gangboost-runtime"]' --port 8080 --port 8081 \
  --label org.opencontainers.image.description="gangboost KServe runtime for XGBoost models (V2 / Open Inference Protocol, REST and gRPC)"

# gangboost: Debian packages unpacked (not installed: no dpkg, no shell), then the binaries.
tr="$work/trainer"
debs="$work/debs"
mkdir -p "$debs" "$tr/usr/share/gangboost"
if ! (cd "$debs" && apt-get download "${DEBS[@]}" >/dev/null 2>&1); then
  apt-get update -qq && (cd "$debs" && apt-get download "${DEBS[@]}" >/dev/null)
fi
echo "# debian packages" >"$tr/usr/share/gangboost/sbom.txt"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$tr"
  dpkg-deb -W --showformat '${Package} ${Version}\n' "$deb" >>"$tr/usr/share/gangboost/sbom.txt"
done
# Manuals and locales are dead weight without a shell; copyright files stay (licences).
rm -rf "$tr/usr/share/man" "$tr/usr/share/info" "$tr/usr/share/locale" "$tr/usr/share/lintian" "$tr/usr/lib/x86_64-linux-gnu/gconv"
users "$tr"
install -D -m 0755 "$BIN/gangboost-train" "$tr/usr/local/bin/gangboost-train"
gomods "$BIN/gangboost-train" "$tr/usr/share/gangboost/sbom.txt"
install -m 0755 "$BIN/gangboost-components" "$tr/usr/local/bin/gangboost-components"
gomods "$BIN/gangboost-components" "$tr/usr/share/gangboost/sbom.txt"
for c in "${COMPONENTS[@]}"; do
  ln -s gangboost-components "$tr/usr/local/bin/$c"
done
commit "$tr" gangboost \
  --cmd '["/usr/local/bin/gangboost-train", "--help"]' \
  --label org.opencontainers.image.description="gangboost trainer (gangboost-train, Go + libxgboost) and Kubeflow Pipelines components (gangboost-components)"
