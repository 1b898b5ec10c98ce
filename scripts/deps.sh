#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing.
# As root on Debian it runs apt-get; elsewhere it names what to install and fails.
set -euo pipefail

packages=(
  libxgboost-dev        # libxgboost for the trainer (cgo)
  python3-xgboost       # reference peer in benchmarks and protocol tests
  python3-numpy
  python3-requests      # the client KServe's Python SDK uses, in protocol tests
  python3-fastapi       # the Python V2 server the load test compares against
  python3-uvicorn
  etcd-server           # the control plane's store in e2e tests
  curl                  # protocol tests and the load test
  jq
  python3-uvloop        # the Python peer uses them as KServe's uvicorn[standard] does
  python3-httptools
  wrk                   # load tests
  hey
  python3-nbclient      # notebooks executed in the tests
  python3-nbformat
  python3-ipykernel
  python3-matplotlib
  buildah               # images built without a Docker daemon, from scratch
  podman                # and run in the image tests
  runc
  containerd            # the test control plane's real node: containerd (CRI), the CNI bridge,
  containernetworking-plugins # and nftables to remove iptables-nft's tables after it
  nftables
)
[ "$#" -gt 0 ] && packages=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
