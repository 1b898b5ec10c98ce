#!/usr/bin/env bash
# Assembles KFP's Python SDK (kfp, kfp.kubernetes, kfp.pipeline_spec) from a checkout of
# github.com/kubeflow/pipelines into DIR, for Debian's python3, and prints the PYTHONPATH to use.
# For machines that cannot pip install kfp==2.15.2 kfp-kubernetes (no PyPI): the SDK's own Python
# sources, its protos compiled here with Debian's protoc for Debian's protobuf runtime, and its
# dependencies from Debian's packages (installed when missing and running as root).
#
# Usage: scripts/kfp-python-sdk.sh SRC DIR
#   SRC  a checkout of kubeflow/pipelines (e.g. at tag sdk-2.15.2): sdk/python, api/v2alpha1,
#        kubernetes_platform, backend/api/v2beta1/python_http_client (kfp_server_api)
#   DIR  where the assembled packages go (replaced)
#
# What is not the SDK's own code, and why:
#   - google/rpc/status.proto, which pipeline_spec.proto imports, written out below (Debian ships
#     no Python googleapis-common-protos); its message is googleapis' google.rpc.Status, its module
#     kfp.pipeline_spec.status_pb2.
#   - docstring_parser (not in Debian): a stand-in whose parse() finds no parameters. The SDK
#     uses it only to read a Python function component's docstring; loading component YAML,
#     composing and compiling pipelines do not depend on what it returns.
set -euo pipefail

src=${1:?usage: scripts/kfp-python-sdk.sh SRC DIR}
dir=${2:?usage: scripts/kfp-python-sdk.sh SRC DIR}
for p in sdk/python/kfp backend/api/v2beta1/python_http_client/kfp_server_api api/v2alpha1/pipeline_spec.proto kubernetes_platform/proto/kubernetes_executor_config.proto kubernetes_platform/python/kfp/kubernetes; do
  if [[ ! -e $src/$p ]]; then
    echo "kfp-python-sdk: $src has no $p: give a checkout of github.com/kubeflow/pipelines" >&2
    exit 2
  fi
done

# Debian's packages for what the SDK imports when it loads, composes and compiles.
debs=(python3-protobuf protobuf-compiler libprotobuf-dev python3-yaml python3-click python3-kubernetes
  python3-google-auth python3-tabulate python3-requests-toolbelt python3-click-option-group python3-typing-extensions
  python3-dateutil python3-certifi python3-six python3-urllib3)
missing=()
for d in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || missing+=("$d")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "kfp-python-sdk: missing Debian packages ${missing[*]}: apt-get install them (as root)" >&2
    exit 3
  fi
  echo "kfp-python-sdk: apt-get install ${missing[*]}" >&2
  apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
fi

rm -rf "$dir"
mkdir -p "$dir/kfp/pipeline_spec" "$dir/proto/google/rpc" "$dir/docstring_parser"
cp -r "$src/sdk/python/kfp/." "$dir/kfp/"
find "$dir/kfp" -name '*_test.py' -delete
cp -r "$src/kubernetes_platform/python/kfp/kubernetes" "$dir/kfp/kubernetes"
cp -r "$src/backend/api/v2beta1/python_http_client/kfp_server_api" "$dir/kfp_server_api"
rm -f "$dir/kfp/kubernetes/kubernetes_executor_config_pb2.py" # compiled for protobuf 6; rebuilt below
touch "$dir/kfp/pipeline_spec/__init__.py"

cat >"$dir/proto/google/rpc/status.proto" <<'PROTO'
syntax = "proto3";
package google.rpc;
import "google/protobuf/any.proto";
option go_package = "google.golang.org/genproto/googleapis/rpc/status;status";
message Status {
  int32 code = 1;
  string message = 2;
  repeated google.protobuf.Any details = 3;
}
PROTO
cp "$src/api/v2alpha1/pipeline_spec.proto" "$src/kubernetes_platform/proto/kubernetes_executor_config.proto" "$dir/proto/"
protoc -I "$dir/proto" -I /usr/include --python_out="$dir/proto" \
  "$dir/proto/google/rpc/status.proto" "$dir/proto/pipeline_spec.proto" "$dir/proto/kubernetes_executor_config.proto"
# Debian's google namespace package is set up at start-up (a .pth file) and takes no other
# folder: google.rpc's status goes beside pipeline_spec_pb2, which imports it from there.
mv "$dir/proto/google/rpc/status_pb2.py" "$dir/kfp/pipeline_spec/"
sed 's/^from google.rpc import status_pb2 as/from kfp.pipeline_spec import status_pb2 as/' \
  "$dir/proto/pipeline_spec_pb2.py" >"$dir/kfp/pipeline_spec/pipeline_spec_pb2.py"
# The SDK's packages import these by their package paths.
sed 's/^import pipeline_spec_pb2 as/from kfp.pipeline_spec import pipeline_spec_pb2 as/' \
  "$dir/proto/kubernetes_executor_config_pb2.py" >"$dir/kfp/kubernetes/kubernetes_executor_config_pb2.py"
rm -rf "$dir/proto"

cat >"$dir/docstring_parser/__init__.py" <<'PY'
"""Stand-in for docstring_parser (not in Debian): parse() finds no parameters or returns.

KFP's SDK uses it only for a Python function component's docstring."""
import dataclasses
from typing import List, Optional


@dataclasses.dataclass
class DocstringParam:
    args: List[str]
    description: Optional[str]
    arg_name: str
    type_name: Optional[str] = None
    is_optional: Optional[bool] = None
    default: Optional[str] = None


@dataclasses.dataclass
class DocstringReturns:
    args: List[str]
    description: Optional[str]
    type_name: Optional[str] = None
    is_generator: bool = False
    return_name: Optional[str] = None


@dataclasses.dataclass
class Docstring:
    short_description: Optional[str] = None
    long_description: Optional[str] = None
    params: List[DocstringParam] = dataclasses.field(default_factory=list)
    returns: Optional[DocstringReturns] = None
    many_returns: List[DocstringReturns] = dataclasses.field(default_factory=list)
    blank_after_short_description: bool = False
    blank_after_long_description: bool = False
    meta: list = dataclasses.field(default_factory=list)


def parse(text, style=None):
    text = (text or "").strip()
    short, _, rest = text.partition("\n")
    return Docstring(short_description=short or None, long_description=rest.strip() or None)
PY
echo "$dir"
