#!/usr/bin/env bash
# Profiles gangboost-runtime under the load test's load (`make load-profile`): the server on core
# 0 (GOMAXPROCS=1), the load generator on the other cores, one protocol at a time (REST JSON,
# REST binary, gRPC), each with a CPU profile and an allocation profile of DURATION of load,
# taken through --pprof_port. The profiles land in PROFILE_DIR (default profiles/, *.prof is
# ignored by git) and the top of each is printed.
#
# With PGO_OUT set (`make pgo-profile`), the three CPU profiles are merged into that file: the
# profile the runtime's build optimizes for (runtime/cmd/gangboost-runtime/default.pgo, which
# go build applies to that main package by itself).
#
# Settings (environment): DURATION=10s CONNECTIONS=32 PROFILE_DIR=profiles TOP=25 PGO_OUT=
#   GANGBOOST_RUNTIME=bin/gangboost-runtime (built into a temporary folder when missing)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
PROFILE_DIR=${PROFILE_DIR:-profiles}
TOP=${TOP:-25}
model=iris
model_dir=$root/runtime/testdata/models/iris
body='{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'
bin_header='{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}],"parameters":{"binary_data_output":true}}'
bin_hex=$(python3 -c 'import struct, sys; print((sys.argv[1].encode() + struct.pack("<4f", 5.1, 3.5, 1.4, 0.2)).hex())' "$bin_header")
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || { echo "load-profile: needs 2 cores (server and load generator apart)" >&2; exit 1; }
load_cpus=1-$((ncpu - 1))
seconds=${DURATION%s}

work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

gbr=${GANGBOOST_RUNTIME:-$root/bin/gangboost-runtime}
if [ ! -x "$gbr" ]; then
  gbr=$work/gangboost-runtime
  CGO_ENABLED=0 go build -trimpath -o "$gbr" ./runtime/cmd/gangboost-runtime
fi
go build -o "$work/grpcload" ./runtime/loadtest/grpcload
mkdir -p "$PROFILE_DIR"

# pprof is go tool pprof without the build settings make exports for the cgo build of the
# trainer (with them, the tool would run against the xgboost sysroot's libraries).
pprof() { env -u GOFLAGS -u CGO_LDFLAGS -u CGO_CFLAGS go tool pprof "$@"; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port=$(free_port) grpc_port=$(free_port) pprof_port=$(free_port)
GOMAXPROCS=1 taskset -c 0 "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "$http_port" \
  --grpc_port "$grpc_port" --pprof_port "$pprof_port" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 600); do
  curl -sf -o /dev/null "http://127.0.0.1:$http_port/v2/health/ready" && break
  sleep 0.05
done
url=http://127.0.0.1:$http_port/v2/models/$model/infer

# profile NAME LOAD-COMMAND...: runs the load for DURATION while both profiles are taken.
profile() {
  local name=$1
  shift
  "$@" >/dev/null &
  local load=$!
  sleep 0.5
  curl -sf -o "$PROFILE_DIR/$name.cpu.prof" "http://127.0.0.1:$pprof_port/debug/pprof/profile?seconds=$((seconds - 2))" &
  local cpu=$!
  curl -sf -o "$PROFILE_DIR/$name.allocs.prof" "http://127.0.0.1:$pprof_port/debug/pprof/allocs?seconds=$((seconds - 2))"
  wait "$cpu" "$load"
  echo "== $name: CPU ($PROFILE_DIR/$name.cpu.prof)"
  pprof -top -nodecount "$TOP" "$PROFILE_DIR/$name.cpu.prof" 2>/dev/null | tail -n +4
  echo "== $name: allocations ($PROFILE_DIR/$name.allocs.prof)"
  pprof -top -sample_index alloc_objects -nodecount "$TOP" "$PROFILE_DIR/$name.allocs.prof" 2>/dev/null | tail -n +4
}

profile rest-json env LOADTEST_BODY="$body" taskset -c "$load_cpus" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s runtime/loadtest/post.lua "$url"
profile rest-binary env LOADTEST_BODY_HEX="$bin_hex" LOADTEST_HEADER_LENGTH="${#bin_header}" \
  taskset -c "$load_cpus" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s runtime/loadtest/post.lua "$url"
profile grpc taskset -c "$load_cpus" "$work/grpcload" -addr "127.0.0.1:$grpc_port" -model "$model" -c "$CONNECTIONS" -d "$DURATION" -warmup 0s

if [ -n "${PGO_OUT:-}" ]; then
  pprof -proto "$PROFILE_DIR"/rest-json.cpu.prof "$PROFILE_DIR"/rest-binary.cpu.prof "$PROFILE_DIR"/grpc.cpu.prof \
    >"$PGO_OUT.tmp" 2>/dev/null
  mv "$PGO_OUT.tmp" "$PGO_OUT"
  echo "== merged CPU profile for the build: $PGO_OUT ($(wc -c <"$PGO_OUT") bytes)"
fi
