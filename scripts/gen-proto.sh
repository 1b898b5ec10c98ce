#!/usr/bin/env bash
# Regenerates the Go code of the V2 / Open Inference Protocol gRPC API
# (runtime/grpc/inference) from grpc_predict_v2.proto.
#
#   scripts/gen-proto.sh           rewrite the generated files in place
#   scripts/gen-proto.sh --check   fail if the committed files differ from a fresh run
#
# protoc comes from Debian's protobuf-compiler; the two Go plugins are pinned
# and installed into a private GOBIN, so the output does not depend on
# whatever plugin happens to be on PATH. The pins match the module versions
# in go.mod (google.golang.org/protobuf, google.golang.org/grpc).
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.5.1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pkg_dir="runtime/grpc/inference"
proto="grpc_predict_v2.proto"

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v protoc >/dev/null; then
  echo "protoc not found: install Debian's protobuf-compiler (scripts/deps.sh protobuf-compiler)" >&2
  exit 1
fi
command -v go >/dev/null || { echo "go not found on PATH" >&2; exit 1; }

# One directory per pin pair: a bumped pin installs afresh, an unchanged one is reused.
gobin="${GANGBOOST_PROTOC_PLUGINS:-${TMPDIR:-/tmp}/gangboost-protoc-plugins/go-${PROTOC_GEN_GO_VERSION}_grpc-${PROTOC_GEN_GO_GRPC_VERSION}}"
mkdir -p "$gobin"

# install_plugin BINARY MODULE_PATH@VERSION EXPECTED_VERSION_OUTPUT
install_plugin() {
  local bin="$1" target="$2" want="$3" got=""
  if [ -x "$gobin/$bin" ]; then
    got="$("$gobin/$bin" --version 2>/dev/null || true)"
  fi
  if [ "$got" != "$want" ]; then
    echo "installing $target into $gobin"
    # Outside any module, so go.mod of this repository is neither read nor changed.
    (cd "$gobin" && GOBIN="$gobin" GOFLAGS= GO111MODULE=on go install "$target")
    got="$("$gobin/$bin" --version)"
    if [ "$got" != "$want" ]; then
      echo "$bin reports version \"$got\", expected \"$want\"" >&2
      exit 1
    fi
  fi
}
install_plugin protoc-gen-go \
  "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}" \
  "protoc-gen-go ${PROTOC_GEN_GO_VERSION}"
install_plugin protoc-gen-go-grpc \
  "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}" \
  "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"

out="$root/$pkg_dir"
if [ "$check" = 1 ]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

# paths=source_relative writes next to the .proto instead of under the
# go_package import path.
PATH="$gobin:$PATH" protoc \
  --proto_path="$root/$pkg_dir" \
  --go_out="$out" --go_opt=paths=source_relative \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
  "$root/$pkg_dir/$proto"

if [ "$check" = 1 ]; then
  status=0
  for f in grpc_predict_v2.pb.go grpc_predict_v2_grpc.pb.go; do
    if ! diff -u "$root/$pkg_dir/$f" "$out/$f"; then
      echo "$pkg_dir/$f is stale: run scripts/gen-proto.sh" >&2
      status=1
    fi
  done
  exit "$status"
fi
echo "generated $pkg_dir/grpc_predict_v2.pb.go and $pkg_dir/grpc_predict_v2_grpc.pb.go"
