#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when missing.
#   scripts/deps.sh build   what `make build` and `make demo` need: gcc for the trainer's cgo link
#                           (libxgboost 3.0 itself comes from Debian 13's .debs, unpacked into the
#                           tool cache by scripts/xgboost-sysroot.sh, never installed)
#   scripts/deps.sh test    everything `make test` needs: the build's, the peers, the control plane's
#                           store, the image tools and the other architecture's cross compiler
#   scripts/deps.sh P...    the named packages
# As root on Debian it runs apt-get; elsewhere it names what to install and fails.
set -euo pipefail

build_packages=(
  gcc                   # the trainer's cgo link against the libxgboost 3.0 sysroot; the demo needs nothing else
  libc6-dev
)
test_packages=(
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
  mariadb-server        # the Kubeflow Model Registry's database in the registry tests
)

set_name=${1:-test}
case $set_name in
  build) shift; packages=("${build_packages[@]}") ;;
  test)
    shift || true
    packages=("${build_packages[@]}" "${test_packages[@]}")
    # make images builds for amd64 and arm64 (IMAGE_ARCHES): for the architecture that is not the
    # host's, a cross C compiler links gangboost-train (cgo) against that architecture's libxgboost
    # 3.0 sysroot (scripts/xgboost-sysroot.sh ARCH downloads it without dpkg knowing the
    # architecture).
    host=$(dpkg --print-architecture)
    for arch in ${IMAGE_ARCHES:-amd64 arm64}; do
      [ "$arch" = "$host" ] && continue
      case $arch in
        amd64) cc=gcc-x86-64-linux-gnu ;;
        arm64) cc=gcc-aarch64-linux-gnu ;;
        *) echo "deps: no cross toolchain known for $arch (amd64, arm64)" >&2; exit 1 ;;
      esac
      packages+=("$cc")
    done
    ;;
  *) packages=("$@") ;;
esac

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
  echo "install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
