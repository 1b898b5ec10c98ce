#!/usr/bin/env bash
# Makes the libxgboost 3.0 sysroot gangboost-train links against, from Debian 13 (trixie)
# packages, and prints its folder:
#   scripts/xgboost-sysroot.sh [ARCH]          ARCH: amd64 (default: the host's) or arm64
#   scripts/xgboost-sysroot.sh --path [ARCH]   only print the folder (made or not)
# The folder, $GANGBOOST_CACHE (default ~/.cache/gangboost)/xgboost-sysroot-<version>-<arch>, holds
# the .debs (debs/) and their contents unpacked with dpkg-deb -x (root/): libxgboost, the libraries
# it links, and the C library and headers a cgo link needs. It is made once; a second run only
# prints it. Nothing is installed: trixie's libc and libstdc++ must never reach a Debian 12 /, so
# apt-get runs with its own sources list and lists folder (under the cache) and only downloads.
# The gangboost image's root is unpacked from the same .debs (scripts/build-images.sh), so the
# trainer links and runs on the same libraries on a laptop and in a pod. DESIGN.md "Training on
# libxgboost 3.0 from Debian 13" has the facts this rests on; scripts/xgboost-flags.sh the flags.
set -euo pipefail
XGBOOST_DEB_VERSION=3.0.0-1
path_only=false
[[ ${1:-} == --path ]] && { path_only=true; shift; }
arch=${1:-$(dpkg --print-architecture 2>/dev/null || go env GOARCH)}
case $arch in
  amd64) triplet=x86_64-linux-gnu ;;
  arm64) triplet=aarch64-linux-gnu ;;
  *) echo "xgboost-sysroot: architecture $arch is not supported (amd64, arm64)" >&2; exit 1 ;;
esac
cache=${GANGBOOST_CACHE:-$HOME/.cache/gangboost}
dir=$cache/xgboost-sysroot-$XGBOOST_DEB_VERSION-$arch
# The mirror this machine's apt uses (deb.debian.org when it names none).
MIRROR=${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p; s/^deb \(http[^ ]*\/debian\) .*/\1/p' \
  /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# What the image's root needs (libxgboost and what it and gangboost-train link), then what only a
# link needs (headers, libc.so and the crt files).
RUNTIME_DEBS=(libxgboost0 libdmlc0t64 libgomp1 libstdc++6 libgcc-s1 libc6 gcc-14-base)
LINK_DEBS=(libxgboost-dev libc6-dev linux-libc-dev libcrypt1 libcrypt-dev)

if $path_only || [[ -f $dir/.complete ]]; then
  echo "$dir"
  exit 0
fi
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
  echo "xgboost-sysroot: apt-get and dpkg-deb are needed to download and unpack Debian 13's libxgboost $XGBOOST_DEB_VERSION (a Debian or Ubuntu machine)" >&2; exit 1; }
echo "xgboost-sysroot: downloading libxgboost $XGBOOST_DEB_VERSION for $arch from $MIRROR trixie into $dir" >&2
rm -rf "$dir"
apt=$dir.apt
rm -rf "$apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/debs"
echo "deb $MIRROR trixie main" >"$apt/sources.list"
aptopts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt/lists"
  -o "Dir::Cache=$apt/cache" -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o Debug::NoLocking=1)
# Downloads go straight into the cache (root: no hand-over to the _apt user, who cannot write there).
[[ $(id -u) == 0 ]] && aptopts+=(-o APT::Sandbox::User=root)
apt-get "${aptopts[@]}" update -qq 2>&1 | grep -v '^W:' >&2 || true
(cd "$dir/debs" && apt-get "${aptopts[@]}" download "${RUNTIME_DEBS[@]}" "${LINK_DEBS[@]}" >/dev/null) || {
  echo "xgboost-sysroot: apt-get download from $MIRROR trixie failed (DEBIAN_MIRROR=<url>/debian names another mirror)" >&2; exit 1; }
got=$(dpkg-deb -f "$dir/debs"/libxgboost0_*.deb Version)
[[ $got == "$XGBOOST_DEB_VERSION" ]] || {
  echo "xgboost-sysroot: trixie has libxgboost0 $got, not $XGBOOST_DEB_VERSION: update XGBOOST_DEB_VERSION in $0 and the tests' expectations" >&2; exit 1; }
for deb in "$dir/debs"/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
# Debian 13 is merged-/usr; a link resolves paths such as /lib64/ld-linux-x86-64.so.2 that the
# libraries name inside the sysroot.
ln -sfn usr/lib "$dir/root/lib"
[[ $arch == amd64 ]] && ln -sfn usr/lib64 "$dir/root/lib64"
rm -rf "$apt"
touch "$dir/.complete"
echo "$dir"
