#!/usr/bin/env bash
# The tests of `make test`, after its build and vet: first every package that does not start a
# test control plane (as `go test` would, from test binaries kept between runs, one package per
# core at a time: unittest below), then the ones that do, the
# KServe v0.15 serving tier, test/images, the KServe types module and the fuzz targets, as four
# streams at once.
#
# The other packages run first, not beside the streams: at nice 10 beside them (2026-11-29) the
# whole took 13 min 26 s and 24.8 CPU-minutes against 13 min 0 s and 21.1 run first, the planes'
# packages slower by a quarter under the added load.
#
# A control-plane package spends most of its time waiting on controllers, Volcano and its pods
# (about two thirds of one core when it runs alone), so two at a time, as `go test ./...` ran
# them, left part of a 2-core machine idle for nine minutes, and the v0.15 tier ran after them.
# Several streams keep both cores busy. Each stream is one `go test` per package, in order,
# balanced by the packages' measured times. Three streams (2026-11-29: launche2e 450 s, realnode
# 435 s, serving 256 s and its v0.15 tier 300 s, e2e 202 s, kservetypes and fuzz 134 s,
# test/images 70 s, notebooks 64 s) ended within a minute of each other until the serving tier
# got quicker (2026-12-06: the runtimes' readiness probed every second, the deploy step failing
# at once on a Serverless rejection; the tier 155 -> 93 s run alone): then realnode and e2e, one
# stream, ended last, and make test took 10 min 16 s. Four, with e2e a stream of its own and
# notebooks and test/images after it, end within 35 s of each other, 420-455 s after they start
# (make test 9 min 57 s, 17.6 CPU-minutes: realnode 429 s, launche2e 274 s, serving 192 s and
# 194 s, e2e 161 s, notebooks 96 s, test/images 155 s); the two cores are then busy throughout,
# so more streams would only share them. The two serving tiers share a stream: their runtime
# pods run as local processes that listen on the same host ports (8080, 8081), and their
# pipeline's gang on the launch step's default Master port (9999). Pods of the other streams'
# planes run on the same host: their ports must be free ones (cluster.FreePort), never those.
#
# Every line a stream prints is prefixed with its name; the script fails when any stream fails,
# after all of them have ended (a failing stream does not stop the others' tests half-way), and
# then repeats the failing tests' names, the first line of each of their messages and the pods the
# test clusters refused to run: a failure's own words come before the control plane's logs it
# prints, which can run to thousands of lines and push them out of what a CI log keeps.
#
# Environment: GO (default go), MAKE (default make), TEST_LDFLAGS (go test's -ldflags, default
# scripts/xgboost-flags.sh testldflags), FUZZTIME (default 10000x, see the Makefile's fuzz target),
# CI (default true: a control plane that cannot start fails), GANGBOOST_TEST_BINARIES (where the
# test binaries are kept, default below).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
GO=${GO:-go}
MAKE=${MAKE:-make}
FUZZTIME=${FUZZTIME:-10000x}
TEST_LDFLAGS=${TEST_LDFLAGS:-$(scripts/xgboost-flags.sh testldflags)}
export CI=${CI:-true}
# Every go test below runs with -vet=off: make test's go vet ./... has run, before this script, every
# analyzer go test's vet would (go test runs a high-confidence subset of them) on the same packages
# and their test files. go test's pass would not reuse go vet's work: a package's vet facts are
# cached under the analyzers' flags, so it type-checks and analyses every dependency (the standard
# library included) a second time, which a build from an empty cache pays in full: test/kservetypes'
# go test after its go vet took 98 s and 185 CPU-s of a 2-core machine with vet, for three test files.

outputs=$(mktemp -d)
trap 'rm -rf "$outputs"' EXIT

# stream NAME COMMAND...: runs COMMAND (a shell string) with its lines prefixed "[NAME] ", and
# keeps them in $outputs/NAME. Its last line says how long it took, the figure the streams are
# balanced by.
stream() {
  local name=$1
  shift
  (
    set -eo pipefail
    start=$SECONDS
    eval "$*"
    echo "stream done in $((SECONDS - start)) s"
  ) 2>&1 | sed -u "s/^/[$name] /" | tee "$outputs/$name"
}

# failures NAME: from stream NAME's output, the failing tests, each with the first line (at most
# 300 characters) of each of its messages, the packages that failed, and the pods the test
# clusters' pod runners failed before any container ran; at most 200 lines.
failures() {
  awk '
    /^\[[a-z0-9]+\] --- FAIL: / { print; next }
    /^\[[a-z0-9]+\] +[^ ]+\.go:[0-9]+: / { print substr($0, 1, 300); next }
    /^\[[a-z0-9]+\] (FAIL|panic:)/ { print; next }
    /^\[[a-z0-9]+\] podrunner: [^ ]+ failed: / { print substr($0, 1, 300) }
  ' "$outputs/$1" | head -n 200
}

# gotest TIMEOUT PACKAGE...: each package's tests in turn, uncached; with test_exec set, their
# test binaries run under it (go test -exec).
gotest() {
  local timeout=$1 pkg
  shift
  for pkg in "$@"; do
    "$GO" test -vet=off ${test_exec:+-exec "$test_exec"} -ldflags="$TEST_LDFLAGS" -count=1 -timeout "$timeout" "./$pkg/"
  done
}

# The test binaries of the packages without a control plane are kept between runs in the user's
# cache: go test -count=1 links every package's test binary again on each run (66 binaries, about
# 120 CPU-s and a minute of a 2-core machine, 2026-11-30), where go test -c -o relinks one only
# when its build ID changed, that is when the package or anything it is built from did. Every
# go command of make builds with -trimpath, so a binary holds no checkout's path and any clone of
# the same code reuses it. One set of binaries for all checkouts (about 1.4 GB), those of
# packages gone removed, and one run at a time uses it (a lock).
# The control-plane packages (planetest) still run through go test: keeping their binaries too
# measured no gain (2026-12-06, warm make test from fresh clones: 11 min 1 s and 16.6 CPU-minutes
# against 10 min 47 s and 16.3): their links are a second or two each beside minutes of tests.
test_binaries=${GANGBOOST_TEST_BINARIES:-${XDG_CACHE_HOME:-$HOME/.cache}/gangboost/test-binaries}

# unittest TIMEOUT PACKAGE...: go test -count=1 -timeout TIMEOUT PACKAGE... from the kept test
# binaries (test_binaries): each binary built or found up to date, then run as go test runs it (in
# its package's folder, -test.paniconexit0), as many at once as the machine has cores, the longest
# first by the last run's times (kept beside the binaries); prints go test's lines ("ok", "FAIL"
# after a failing package's output, "?" for one without tests) and fails when any package failed,
# after all have run.
unittest() {
  local timeout=$1 pkg dir tests name i bin lock
  shift
  local -A uses=() current=()
  local rounds=() jobs=()
  # go test -c writes nothing for a package without tests, so a binary left from an earlier run
  # must not stand in for it: only packages with tests get a job. go test -c -o DIR/ names each
  # binary after its package's last element, or the one before a major version's (runtime/v2:
  # runtime.test): a package whose name an earlier one has goes to the next folder.
  while IFS=$'\t' read -r pkg dir tests; do
    if [ -z "$tests" ]; then
      printf '?   \t%s\t[no test files]\n' "$pkg"
      continue
    fi
    name=${pkg##*/}
    if [[ $name =~ ^v[1-9][0-9]*$ && $pkg == */* ]]; then
      name=${pkg%/*}
      name=${name##*/}
    fi
    i=${uses[$name]:-0}
    uses[$name]=$((i + 1))
    rounds[i]+=" $pkg"
    current[$test_binaries/$i/$name.test]=1
    jobs+=("$pkg"$'\t'"$test_binaries/$i/$name.test"$'\t'"$dir")
  done < <("$GO" list -f $'{{.ImportPath}}\t{{.Dir}}\t{{if or .TestGoFiles .XTestGoFiles}}tests{{end}}' "$@")
  mkdir -p "$test_binaries"
  # The lock is the open file: no process the tests start inherits it (a server left running
  # would hold it), and it goes when this shell closes it or ends.
  exec {lock}>"$test_binaries/.lock"
  if ! flock -n "$lock"; then
    exec {lock}>&-
    echo "run-tests: another make test is using $test_binaries (its .lock): wait for it, or set GANGBOOST_TEST_BINARIES" >&2
    return 1
  fi
  local rc=0
  for i in "${!rounds[@]}"; do
    mkdir -p "$test_binaries/$i"
    # shellcheck disable=SC2086 # a list of packages
    "$GO" test -vet=off -c -o "$test_binaries/$i/" -ldflags="$TEST_LDFLAGS" ${rounds[i]} {lock}>&- || rc=1
  done
  if [ "$rc" -eq 0 ]; then
    for bin in "$test_binaries"/*/*.test; do
      [ -n "${current[$bin]:-}" ] || rm -f "$bin"
    done
    # Longest first, by each package's time in the last run (a package without one first of
    # all): the phase then ends on short packages, not on one long one beside an idle core.
    local durations=$test_binaries/durations
    : >"$durations.new"
    longest_first "$durations" "${jobs[@]}" |
      DURATIONS=$durations.new TIMEOUT=$timeout xargs -d '\n' -n 1 -P "$(nproc)" bash -c 'run_test_binary "$1"' _ {lock}>&-
    rc=$?
    # Only a whole run's times replace the last ones.
    if [ "$rc" -eq 0 ]; then mv "$durations.new" "$durations"; else rm -f "$durations.new"; fi
  fi
  exec {lock}>&-
  return "$rc"
}

# longest_first DURATIONS JOB...: the jobs ("PACKAGE<tab>...") one a line, those whose package
# DURATIONS ("PACKAGE<tab>SECONDS" lines) does not name first, then the others by their seconds,
# most first.
longest_first() {
  local durations=$1
  shift
  printf '%s\n' "$@" | awk -F '\t' -v durations="$durations" '
    BEGIN { while ((getline line < durations) > 0) { split(line, f, "\t"); took[f[1]] = f[2] } }
    { printf "%s\t%s\n", ($1 in took) ? took[$1] : "inf", $0 }
  ' | sort -t $'\t' -k1,1 -g -r -s | cut -f 2-
}

# run_test_binary "PACKAGE<tab>BINARY<tab>DIR": runs one package's test binary as go test does,
# printing its output only when it fails, and adds its time to DURATIONS.
run_test_binary() {
  local pkg bin dir out rc start took
  IFS=$'\t' read -r pkg bin dir <<<"$1"
  start=$(date +%s%N)
  out=$(cd "$dir" && "$bin" -test.paniconexit0 -test.timeout="$TIMEOUT" 2>&1)
  rc=$?
  took=$(awk -v n="$(($(date +%s%N) - start))" 'BEGIN { printf "%.3fs", n / 1e9 }')
  # One short line, appended: the other jobs' lines do not interleave with it.
  printf '%s\t%s\n' "$pkg" "${took%s}" >>"$DURATIONS"
  if [ "$rc" -eq 0 ]; then
    printf 'ok  \t%s\t%s\n' "$pkg" "$took"
  else
    printf '%s\nFAIL\t%s\t%s\n' "$out" "$pkg" "$took"
    return 1
  fi
}
export -f run_test_binary

# planetest TIMEOUT PACKAGE...: gotest for packages that start a control plane, whose test binary
# and every process it starts (etcd, the API server, the controllers, Volcano, the pods' processes)
# run with GOMAXPROCS=1; go test itself builds with every core. The streams run four planes
# and their pods on two cores, a dozen Go processes each; with two Ps a process's idle Ms spin
# looking for work the other streams' processes would have done. Three plane packages at once
# (e2e, launche2e, notebooks; 2026-11-29, two runs each way): 300 and 360 CPU-s with the
# default, 274 and 305 with GOMAXPROCS=1; the last to finish 210 and 238 s against 204 and 223.
planetest() { test_exec="env GOMAXPROCS=1" gotest "$@"; }

# Each stream's packages, beside what else it runs. Together they are the packages go test ./...
# leaves out below: those that start a control plane, and test/images, which builds images with
# buildah for a minute and ended the first half alone.
launche2e_pkgs=(test/cluster/launche2e)
realnode_pkgs=(test/cluster/realnode)
e2e_pkgs=(test/cluster/e2e notebooks)
# Last in e2e's stream, minutes after realnode's own image builds at its start, beside which
# test/images took 180 s, not 62-102.
e2e_after_pkgs=(test/images)
serving_pkgs=(test/cluster/serving)
streamed=("${launche2e_pkgs[@]}" "${realnode_pkgs[@]}" "${e2e_pkgs[@]}" "${e2e_after_pkgs[@]}" "${serving_pkgs[@]}")
module=$("$GO" list -m)
unittest 45m $("$GO" list ./... | grep -v -x -F "${streamed[@]/#/-e$module/}") || exit 1

declare -A pids
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
stream launche2e 'planetest 45m "${launche2e_pkgs[@]}"
  (cd test/kservetypes && "$GO" vet ./... && "$GO" test -vet=off -ldflags="$TEST_LDFLAGS" -count=1 ./...)
  "$MAKE" --no-print-directory fuzz FUZZTIME="$FUZZTIME" TEST_LDFLAGS="$TEST_LDFLAGS"' &
pids[launche2e]=$!
stream realnode 'planetest 45m "${realnode_pkgs[@]}"' &
pids[realnode]=$!
stream e2e 'planetest 45m "${e2e_pkgs[@]}"
  gotest 45m "${e2e_after_pkgs[@]}"' &
pids[e2e]=$!
stream serving 'planetest 45m "${serving_pkgs[@]}"
  GANGBOOST_KSERVE_VERSION=v0.15.2 planetest 20m test/cluster/serving' &
pids[serving]=$!

failed=()
for name in launche2e realnode e2e serving; do
  wait "${pids[$name]}" || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    echo "run-tests: what failed in stream $name:" >&2
    failures "$name" >&2
  done
  echo "run-tests: failed: ${failed[*]}" >&2
  exit 1
fi
