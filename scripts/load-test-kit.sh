#!/usr/bin/env bash
# Packs `make load-test` for a machine that has neither Go, wrk, curl nor jq, and no network
# (`make load-test-kit`): a 16-core host lent for a few minutes, where the fair figures of
# runtime/README.md ("Under load") are measured with the load generator on cores of its own.
# The tarball (KIT, default bin/load-test-kit.tgz) holds:
#   bin/gangboost-runtime          make build's (its default.pgo profile included)
#   tools/                         the peers and load tools of runtime/loadtest (LOADTEST_TOOLS)
#   bench/rest.test                runtime/rest's benchmarks: the handler against the floor's
#   debian/                        wrk, curl, jq and taskset from this machine's Debian release,
#                                  with every library they load, glibc and its loader included
#   path/                          a command for each, which runs it on those libraries through
#                                  that loader, so the host's own C library does not matter
#   run.sh                         runs scripts/load-test.sh of the checkout it is started in
#                                  with the kit, then the handler benchmarks on one core, and
#                                  writes load-test.log, load-test.json and bench.log into $OUT
#                                  (or OUT_DIR)
# On the lent machine, in the checkout (the device tool copies it there and carries the kit):
#   tar -xzf bin/load-test-kit.tgz -C /tmp && /tmp/kit/run.sh
# run.sh passes on the load test's settings (SERVER_CORES, ROUNDS, PAIRED_ROUNDS, DURATION, ...)
# and defaults them to the fair run of runtime/README.md: SERVER_CORES="1 2" ROUNDS=3
# PAIRED_ROUNDS=3 DURATION=4s, no Python server (PYTHON_PEER=off).
#
# The runtime in the kit is the one of the checkout when the kit was made: make the kit again
# after a change to the runtime (run.sh prints the commit it was built from).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
KIT=${KIT:-bin/load-test-kit.tgz}

die() { echo "load-test-kit: $*" >&2; exit 1; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "needs apt-get and dpkg-deb (Debian)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kit=$work/kit
mkdir -p "$kit/bin" "$kit/tools" "$kit/debian" "$kit/path" "$work/debs"

# The runtime make load-test measures here: make build's (the Makefile's load-test-kit target
# builds it first).
gbr=${GANGBOOST_RUNTIME:-bin/gangboost-runtime}
[ -x "$gbr" ] || die "no $gbr: make build makes it"
cp "$gbr" "$kit/bin/gangboost-runtime"
echo "load-test-kit: building runtime/loadtest's tools and runtime/rest's benchmarks"
for dir in runtime/loadtest/*/; do # each folder a tool, as scripts/load-test.sh takes them
  tool=$(basename "$dir")
  # Without symbol tables (-s -w), which the kit would carry for nothing.
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$kit/tools/$tool" "./runtime/loadtest/$tool"
done
# The handler's own CPU beside the floor's handler's, in process (BenchmarkServeHTTP and
# BenchmarkServeHTTPFloor), which tells the host's cost of the runtime's own work without HTTP.
mkdir -p "$kit/bench"
CGO_ENABLED=0 go test -trimpath -ldflags='-s -w' -c -o "$kit/bench/rest.test" ./runtime/rest

# The load test's commands and everything they load, as this machine's Debian would install
# them (libc6 among them), unpacked without installing: apt-get download into a folder of
# its own, dpkg-deb -x beside it.
commands=(wrk curl jq taskset)
echo "load-test-kit: downloading wrk, curl, jq, util-linux (taskset) and their libraries from Debian"
mapfile -t deps < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances --no-pre-depends wrk curl jq |
  awk '/^[a-z0-9]/ { print $1 }' | sort -u)
# apt downloads as its own user where it may write (else it warns, and downloads as root).
chmod 755 "$work" && chown _apt "$work/debs" 2>/dev/null || true
# util-linux without its dependencies: taskset loads nothing but the C library.
(cd "$work/debs" && apt-get download -q "${deps[@]}" util-linux >/dev/null) ||
  die "apt-get download ${deps[*]} util-linux failed"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/unpacked"
done
# Of the unpacked packages, the four commands and the shared libraries: not their documents,
# locales or glibc's character set converters (gconv), which would make the kit twice as large.
mkdir -p "$kit/debian/usr/bin"
for cmd in "${commands[@]}"; do
  [ -x "$work/unpacked/usr/bin/$cmd" ] || die "no usr/bin/$cmd in the unpacked packages"
  cp -a "$work/unpacked/usr/bin/$cmd" "$kit/debian/usr/bin/"
done
for lib in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
  mkdir -p "$kit/debian/$lib"
  find "$work/unpacked/$lib" -maxdepth 1 -name '*.so*' -exec cp -a {} "$kit/debian/$lib/" \;
done
# The loader itself, not lib64's link to it: that link names an absolute path, which on the
# other machine is its own loader.
loader=lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -f "$kit/debian/$loader" ] && [ ! -L "$kit/debian/$loader" ] || die "no $loader in the unpacked libc6"
for cmd in "${commands[@]}"; do
  cat >"$kit/path/$cmd" <<EOF
#!/bin/sh
# $cmd of the kit's Debian packages, on their own C library and libraries.
d=\$(cd "\$(dirname "\$0")/../debian" && pwd)
exec "\$d/$loader" --library-path "\$d/lib/x86_64-linux-gnu:\$d/usr/lib/x86_64-linux-gnu" "\$d/usr/bin/$cmd" "\$@"
EOF
  chmod +x "$kit/path/$cmd"
done
# Each command runs here, through its wrapper, before the kit is packed.
for cmd in wrk curl jq; do
  version=$("$kit/path/$cmd" --version 2>&1 || true) # wrk --version exits 1
  grep -qi "$cmd" <<<"$version" || die "$cmd does not run through the kit's loader: $version"
done
"$kit/path/taskset" -c 0 true || die "taskset does not run through the kit's loader"

commit=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain -- runtime ':(exclude)*.md' | head -1)
cat >"$kit/run.sh" <<EOF
#!/usr/bin/env bash
# The load test with this kit (scripts/load-test-kit.sh): run it in the checkout.
set -euo pipefail
kit=\$(cd "\$(dirname "\$0")" && pwd)
out=\${OUT_DIR:-\${OUT:-\$PWD/load-test-out}}
mkdir -p "\$out"
export PATH=\$kit/path:\$PATH GANGBOOST_RUNTIME=\$kit/bin/gangboost-runtime LOADTEST_TOOLS=\$kit/tools
export PYTHON_PEER=\${PYTHON_PEER:-off} SERVER_CORES="\${SERVER_CORES:-1 2}" ROUNDS=\${ROUNDS:-3}
export PAIRED_ROUNDS=\${PAIRED_ROUNDS:-3} DURATION=\${DURATION:-4s} WARMUP=\${WARMUP:-1s}
export LOAD_TEST_OUT=\$out/load-test.json PYTHON=\${PYTHON:-\$(command -v python3)}
{
  echo "load-test kit: gangboost-runtime of commit $commit${dirty:+ (with uncommitted runtime changes)}, checkout at \$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: \$(nproc) CPUs, \$(uname -srm)"
  scripts/load-test.sh
} 2>&1 | tee "\$out/load-test.log"
# On one core, as the load test's one-core server: three runs of each.
(cd runtime/rest && taskset -c 0 "\$kit/bench/rest.test" -test.run '^\$' -test.cpu 1 -test.count 3 \
  -test.bench 'ServeHTTP|ExchangeServe/json-1row') 2>&1 | tee "\$out/bench.log"
EOF
chmod +x "$kit/run.sh"

mkdir -p "$(dirname "$KIT")"
tar -czf "$KIT" -C "$work" kit
echo "load-test-kit: $KIT ($(du -h "$KIT" | cut -f1)), gangboost-runtime of commit $commit"
