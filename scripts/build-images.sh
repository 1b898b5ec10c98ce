#!/usr/bin/env bash
# Builds gangboost's two images without a Docker daemon and without pulling a base image (no
# registry is needed; Debian's apt mirror is), for each architecture of ARCHES:
#   gangboost-runtime  FROM scratch: the static runtime, /etc/passwd and /etc/group with the
#                      nonroot user 65532; nothing else, so a read-only root file system suits it
#   gangboost-storage-initializer  the same, with the static storage initializer KServe runs
#                      for s3:// model URIs (manifests/kserve/clusterstoragecontainer.yaml)
#   gangboost          a root made of Debian packages (libxgboost and the libraries it links,
#                      no shell, no package manager) with gangboost-train and gangboost-components,
#                      linked as each pipeline component's command
# The host's pure Go binaries come from make build (bin/); for another architecture the script
# builds them (CGO_ENABLED=0). gangboost-train is linked here for every architecture: make build's
# names the tool cache's loader and libraries (scripts/xgboost-flags.sh local), the image's the usual
# paths. It links libxgboost 3.0 (cgo) against the sysroot of that architecture's Debian 13 .debs
# (scripts/xgboost-sysroot.sh), with Debian's cross compiler (gcc-<triplet>, make deps) for
# another architecture, and the image's root is unpacked from the same .debs.
# Each image carries OCI labels and a file list of what it was made from
# (/usr/share/gangboost/sbom.txt: the .deb names and versions, and the Go modules of every binary).
#
# Writes to $DIST (default dist/), and prints each image's size and build time:
#   <name>-<VERSION>-<arch>.tar  one OCI archive per architecture (config.architecture says which)
#   <name>-<VERSION>.tar         the host's architecture (a hard link to its archive)
# and leaves in the buildah store $REGISTRY/<name>:<VERSION>-<arch> per architecture,
# $REGISTRY/<name>:<VERSION> for the host's, and the manifest list $REGISTRY/<name>:<VERSION>-multiarch
# of them all, which make push pushes as $REGISTRY/<name>:<VERSION> (scripts/push-images.sh).
#
# Environment: VERSION (default: the VERSION file), REGISTRY (default ghcr.io/gangboost),
# ARCHES (default: the host's; make images: amd64 arm64), GANGBOOST_BIN_DIR (default bin/), DIST,
# BUILDAH_STORAGE (extra global buildah flags, e.g. "--root DIR --runroot DIR" for a private store).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(cat VERSION)}
REGISTRY=${REGISTRY:-ghcr.io/gangboost}
BIN=${GANGBOOST_BIN_DIR:-$PWD/bin}
DIST=${DIST:-$PWD/dist}
HOST_ARCH=$(go env GOARCH)
read -r -a ARCHES <<< "${ARCHES:-$HOST_ARCH}"
read -r -a S <<< "${BUILDAH_STORAGE:-}"
SOURCE=https://github.com/gangboost/gangboost
# Linked into the binaries as make build links it: launch-xgboostjob's default trainer image.
LDFLAGS="-X github.com/gangboost/gangboost/internal/contract/version.Registry=$REGISTRY"
# The Debian 13 packages the trainer's root is made of: libxgboost and what it and the binary
# link (the sysroot's debs/ holds them with the link-only ones).
DEBS=(libxgboost0 libdmlc0t64 libgomp1 libstdc++6 libgcc-s1 libc6 gcc-14-base)
# Every go build below, with make's build tags and compiler flags (scripts/xgboost-flags.sh tags,
# gcflags): the binaries of one architecture, cgo or not, compile the same packages, and those of
# this machine's are make build's.
GO_BUILD=(go build -trimpath -tags="$(scripts/xgboost-flags.sh tags)" -gcflags="$(scripts/xgboost-flags.sh gcflags)")
# The components' commands: links to gangboost-components, which runs the one its name says.
COMPONENTS=(launch-xgboostjob deploy-inferenceservice evaluate prepare-data promote-model)

command -v buildah >/dev/null || { echo "buildah is missing: apt-get install -y buildah" >&2; exit 1; }
# triplet is Debian's multiarch name of architecture $1 (library folders, cross compiler prefix).
triplet() {
  case $1 in
    amd64) echo x86_64-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    *) echo "build-images: architecture $1 is not supported (amd64, arm64)" >&2; return 1 ;;
  esac
}
for arch in "${ARCHES[@]}"; do
  t=$(triplet "$arch")
  [[ $arch == "$HOST_ARCH" ]] && continue
  command -v "$t-gcc" >/dev/null || { echo "build-images: $t-gcc is missing to link gangboost-train for $arch: make deps (or apt-get install gcc-${t//_/-}), or ARCHES=$HOST_ARCH" >&2; exit 1; }
done
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

# debs puts in folder $2 the Debian 13 packages $3... of architecture $1, from its sysroot's
# downloads (scripts/xgboost-sysroot.sh, made when missing).
debs() {
  local arch=$1 dir=$2 sysroot p; shift 2
  sysroot=$(scripts/xgboost-sysroot.sh "$arch")
  mkdir -p "$dir"
  for p in "$@"; do
    cp "$sysroot/debs/${p}_"*.deb "$dir/" || { echo "build-images: $p is not among $sysroot/debs" >&2; return 1; }
  done
}

# commit makes image $2 for architecture $3 from root folder $1 with the given config and writes
# its OCI archive.
commit() {
  local root=$1 name=$2 arch=$3 ref="$REGISTRY/$2:$VERSION"; shift 3
  local start=$SECONDS ctr archive="$DIST/$name-$VERSION-$arch.tar"
  ctr=$(buildah "${S[@]}" from scratch)
  buildah "${S[@]}" copy --quiet "$ctr" "$root/" / >/dev/null
  buildah "${S[@]}" config --os linux --arch "$arch" --user 65532:65532 --workingdir /home/nonroot \
    --env PATH=/usr/local/bin:/usr/bin:/bin \
    --label org.opencontainers.image.title="$name" \
    --label org.opencontainers.image.version="$VERSION" \
    --label org.opencontainers.image.source="$SOURCE" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label org.opencontainers.image.created="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$@" "$ctr"
  buildah "${S[@]}" commit --quiet --rm --format oci "$ctr" "$ref-$arch" >/dev/null
  rm -f "$archive"
  # The archive names the image as it is pulled ($ref), whatever its architecture.
  buildah "${S[@]}" push --quiet "$ref-$arch" "oci-archive:$archive:$ref"
  if [[ $arch == "$HOST_ARCH" ]]; then
    buildah "${S[@]}" tag "$ref-$arch" "$ref"
    ln -f "$archive" "$DIST/$name-$VERSION.tar"
  fi
  echo "image $ref linux/$arch: $(du -h "$archive" | cut -f1) as an OCI archive, built in $((SECONDS - start))s"
}

# binaries puts the binaries of architecture $1 in folder $2: make build's pure Go ones for the
# host's, cross-compiled for another; gangboost-train linked for the image (usual loader and
# library paths) against that architecture's libxgboost 3.0 sysroot.
binaries() {
  local arch=$1 out=$2 t cc=gcc
  t=$(triplet "$arch")
  mkdir -p "$out"
  local start=$SECONDS
  if [[ $arch == "$HOST_ARCH" ]]; then
    cp -a "$BIN/gangboost-runtime" "$BIN/gangboost-storage-initializer" "$BIN/gangboost-components" "$out/"
  else
    cc=$t-gcc
    CGO_ENABLED=0 GOARCH=$arch "${GO_BUILD[@]}" -ldflags="$LDFLAGS" -o "$out/gangboost-runtime" ./runtime/cmd/gangboost-runtime
    CGO_ENABLED=0 GOARCH=$arch "${GO_BUILD[@]}" -ldflags="-s -w $LDFLAGS" -o "$out/gangboost-components" ./cmd/gangboost-components
    CGO_ENABLED=0 GOARCH=$arch "${GO_BUILD[@]}" -ldflags="-s -w" -o "$out/gangboost-storage-initializer" ./runtime/cmd/gangboost-storage-initializer
  fi
  # GOFLAGS= drops make's -r (the tool cache's library folder) that scripts/xgboost-flags.sh adds
  # for binaries run on this machine.
  scripts/xgboost-sysroot.sh "$arch" >/dev/null
  CGO_ENABLED=1 GOARCH=$arch CC="$cc" GOFLAGS= CGO_CFLAGS="$(scripts/xgboost-flags.sh image "$arch" cflags)" \
    CGO_LDFLAGS="$(scripts/xgboost-flags.sh image "$arch" ldflags)" \
    "${GO_BUILD[@]}" -ldflags="$LDFLAGS" -o "$out/gangboost-train" ./components/xgboost-trainer
  echo "binaries for linux/$arch built in $((SECONDS - start))s"
}

IMAGES=(gangboost-runtime gangboost-storage-initializer gangboost)
for name in "${IMAGES[@]}"; do
  buildah "${S[@]}" manifest rm "$REGISTRY/$name:$VERSION-multiarch" >/dev/null 2>&1 || true
  buildah "${S[@]}" manifest create "$REGISTRY/$name:$VERSION-multiarch" >/dev/null
done

for arch in "${ARCHES[@]}"; do
  t=$(triplet "$arch")
  # The Debian packages of the gangboost image's root.
  debs "$arch" "$work/debs-$arch" "${DEBS[@]}"
  bins="$work/bin-$arch"
  binaries "$arch" "$bins"

  # gangboost-runtime: the static binary and the users, nothing else.
  rt="$work/runtime-$arch"
  users "$rt"
  install -D -m 0755 "$bins/gangboost-runtime" "$rt/usr/local/bin/gangboost-runtime"
  mkdir -p "$rt/usr/share/gangboost"
  gomods "$bins/gangboost-runtime" "$rt/usr/share/gangboost/sbom.txt"
  commit "$rt" gangboost-runtime "$arch" \
    --entrypoint '["/usr/local/bin/gangboost-runtime"]' --port 8080 --port 8081 \
    --label org.opencontainers.image.description="gangboost KServe runtime for XGBoost models (V2 / Open Inference Protocol, REST and gRPC)"

  # gangboost-storage-initializer: the same, with the storage initializer.
  si="$work/storage-initializer-$arch"
  users "$si"
  install -D -m 0755 "$bins/gangboost-storage-initializer" "$si/usr/local/bin/gangboost-storage-initializer"
  mkdir -p "$si/usr/share/gangboost"
  gomods "$bins/gangboost-storage-initializer" "$si/usr/share/gangboost/sbom.txt"
  commit "$si" gangboost-storage-initializer "$arch" \
    --entrypoint '["/usr/local/bin/gangboost-storage-initializer"]' \
    --label org.opencontainers.image.description="gangboost KServe storage initializer for s3:// model URIs (downloads with KServe's storage package, checks the model's sha256)"

  # gangboost: Debian packages unpacked (not installed: no dpkg, no shell), then the binaries.
  tr="$work/trainer-$arch"
  mkdir -p "$tr/usr/share/gangboost"
  echo "# debian packages" >"$tr/usr/share/gangboost/sbom.txt"
  for deb in "$work/debs-$arch"/*.deb; do
    dpkg-deb -x "$deb" "$tr"
    dpkg-deb -W --showformat '${Package} ${Version} ${Architecture}\n' "$deb" >>"$tr/usr/share/gangboost/sbom.txt"
  done
  # Debian 13 is merged-/usr and its .debs hold usr/lib only (base-files makes the links): the
  # loader every binary names is /lib64/ld-linux-x86-64.so.2 or /lib/ld-linux-aarch64.so.1.
  ln -sfn usr/lib "$tr/lib"
  [[ -d $tr/usr/lib64 ]] && ln -sfn usr/lib64 "$tr/lib64"
  # Manuals and locales are dead weight without a shell; copyright files stay (licences).
  rm -rf "$tr/usr/share/man" "$tr/usr/share/info" "$tr/usr/share/locale" "$tr/usr/share/lintian" "$tr/usr/lib/$t/gconv"
  users "$tr"
  install -D -m 0755 "$bins/gangboost-train" "$tr/usr/local/bin/gangboost-train"
  gomods "$bins/gangboost-train" "$tr/usr/share/gangboost/sbom.txt"
  install -m 0755 "$bins/gangboost-components" "$tr/usr/local/bin/gangboost-components"
  gomods "$bins/gangboost-components" "$tr/usr/share/gangboost/sbom.txt"
  for c in "${COMPONENTS[@]}"; do
    ln -s gangboost-components "$tr/usr/local/bin/$c"
  done
  # What the image's libxgboost is: the .deb's version for every architecture, and for the host's
  # its XGBuildInfo (gangboost-train --build-info; USE_CUDA says whether it can train on GPUs).
  xgb_labels=(--label "dev.gangboost.libxgboost.version=$(dpkg-deb -f "$work/debs-$arch"/libxgboost0_*.deb Version)")
  if [[ $arch == "$HOST_ARCH" ]]; then
    xgb_labels+=(--label "dev.gangboost.libxgboost.build-info=$("$BIN/gangboost-train" --build-info)")
  fi
  commit "$tr" gangboost "$arch" "${xgb_labels[@]}" \
    --cmd '["/usr/local/bin/gangboost-train", "--help"]' \
    --label org.opencontainers.image.description="gangboost trainer (gangboost-train, Go + libxgboost) and Kubeflow Pipelines components (gangboost-components)"

  for name in "${IMAGES[@]}"; do
    buildah "${S[@]}" manifest add --os linux --arch "$arch" "$REGISTRY/$name:$VERSION-multiarch" \
      "containers-storage:$REGISTRY/$name:$VERSION-$arch" >/dev/null
  done
done
echo "manifest lists $REGISTRY/{gangboost-runtime,gangboost-storage-initializer,gangboost}:$VERSION-multiarch: linux/${ARCHES[*]}"
