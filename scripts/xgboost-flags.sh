#!/usr/bin/env bash
# Prints the cgo flags that link gangboost-train (and every test binary that links libxgboost)
# against the libxgboost 3.0 sysroot of scripts/xgboost-sysroot.sh (which makes it; this script
# only names it):
#   scripts/xgboost-flags.sh [local] cflags|ldflags|goflags|testldflags|env
#                                 for binaries that run on this machine (make build, test, demo)
#   scripts/xgboost-flags.sh image ARCH cflags|ldflags   for the gangboost image of ARCH
#   scripts/xgboost-flags.sh tags                          the build tags of every go command
#   scripts/xgboost-flags.sh gcflags                       the compiler flags of every go command
# Outside make: eval "$(scripts/xgboost-flags.sh env)" exports CGO_CFLAGS, CGO_LDFLAGS and GOFLAGS
# for `go build` and `go test`.
# local: this machine's libc may be older than trixie's (Debian 12's 2.36 < 2.41), so the binary
# runs with the sysroot's dynamic loader and finds every library there by DT_RPATH. RPATH, not
# RUNPATH: RUNPATH is not searched for a library's own dependencies, so libxgboost would load the
# host's libstdc++, which lacks GLIBCXX_3.4.32. Without -L the link takes the host's libc.so from
# gcc's own library path.
# image: the .debs are unpacked at their usual paths in the image, so the binary names the usual
# loader and carries no RPATH.
# goflags (local): make's GOFLAGS (and env's): -trimpath (the Makefile says why), the tags and
# the compiler flags below, and -r. A binary whose only C code is the standard library's (net,
# os/user: a go command whose own -tags replaced the tags below) is linked by Go's internal
# linker, which ignores CGO_LDFLAGS' RPATH but still takes the sysroot's loader from cgo; without
# -r that loader would load the host's older libc and abort ("stack smashing detected"). -r gives
# it the sysroot's library folder. An explicit -ldflags on a go command replaces GOFLAGS' one:
# add -r=<the folder> there for a cgo binary.
# tags: netgo and osusergo, on every go command (make's GOFLAGS, env, scripts/build-images.sh):
# the standard library's net and os/user then use no C code in any binary, so a cgo build
# (gangboost-train, the test binaries) and a CGO_ENABLED=0 one (the other binaries) compile the
# same packages once, where without them net differs and every package above it (HTTP, gRPC,
# the Kubernetes clients) compiled twice: cold, the four CGO_ENABLED=0 binaries of make build
# took 181 s on a 2-core VM after the test packages' build, 13 s with the tags (2026-12-06), and an
# image's gangboost-train for arm64 30 s after the other arm64 binaries, 7 s. Only libxgboost's
# binding is then C, and net resolves names as it does in every CGO_ENABLED=0 binary (Go's own
# resolver, /etc/resolv.conf and /etc/hosts), the trainer's too.
# gcflags: -dwarf=false for every package (make's GOFLAGS, env, scripts/build-images.sh, and
# test/toolbuild for the control plane's tools and MinIO, whose test holds it to this value): the
# compiler writes no debug information, which cost a tenth of a cold build's CPU (2026-12-06, the
# KWOK tool: 157 s with it, 140 s without). Nothing reads it: the binaries that ship were linked
# with -s -w or keep their symbol table, which is what stack traces and profiles use, and test
# binaries link with -w. And the product's packages, the tests' and the tools' are then one
# compilation wherever their modules' versions agree (the tool modules that keep their peers'
# versions: TestToolModulesShareTheProductsVersions in test/cluster), where a package compiled
# with and without the flag is two. A debugger's build sets its own: an explicit -gcflags, such as
# go build -gcflags=all='-N -l', replaces this one.
# testldflags: the -ldflags value of make test's go test commands: goflags' -r, and no DWARF (-w).
# Nothing a test does reads DWARF (stack traces and profiles use the symbol table), and without it
# each test binary links in about a quarter less CPU (test/cluster/e2e's: 9.5 -> 7.1 CPU-s); make
# test links some 160.
set -euo pipefail
mode=local
case ${1:-} in
  local) shift ;;
  image) mode=image; arch=${2:?usage: $0 image ARCH cflags|ldflags}; shift 2 ;;
esac
tags=netgo,osusergo
gcflags=all=-dwarf=false
[[ ${1:-} == tags ]] && { echo "$tags"; exit 0; }
[[ ${1:-} == gcflags ]] && { echo "$gcflags"; exit 0; }
[[ $mode == local ]] && arch=$(dpkg --print-architecture 2>/dev/null || go env GOARCH)
case $arch in
  amd64) triplet=x86_64-linux-gnu loader=usr/lib64/ld-linux-x86-64.so.2 ;;
  arm64) triplet=aarch64-linux-gnu loader=usr/lib/ld-linux-aarch64.so.1 ;;
  *) echo "xgboost-flags: architecture $arch is not supported (amd64, arm64)" >&2; exit 1 ;;
esac
S=$("$(dirname "$0")/xgboost-sysroot.sh" --path "$arch")/root
libs=$S/usr/lib/$triplet
goflags="-trimpath -tags=$tags -gcflags=$gcflags -ldflags=-r=$libs"
cflags="--sysroot=$S"
ldflags="--sysroot=$S -L$libs -Wl,-rpath-link,$libs"
[[ $mode == local ]] && ldflags+=" -Wl,--dynamic-linker=$S/$loader -Wl,--disable-new-dtags,-rpath,$libs"
case ${1:-} in
  cflags) echo "$cflags" ;;
  ldflags) echo "$ldflags" ;;
  goflags) echo "$goflags" ;;
  testldflags) echo "-r=$libs -w" ;;
  # env: make's go environment, so go commands outside make reuse the packages make compiled.
  env) printf 'export CGO_CFLAGS=%q CGO_LDFLAGS=%q GOFLAGS=%q\n' "$cflags" "$ldflags" "${GOFLAGS:+$GOFLAGS }$goflags" ;;
  *) echo "usage: $0 [local | image ARCH] cflags|ldflags|goflags|testldflags|env, or $0 tags|gcflags" >&2; exit 2 ;;
esac
