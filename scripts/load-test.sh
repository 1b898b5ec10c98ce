#!/usr/bin/env bash
# Load test of gangboost-runtime (`make load-test`): single-row V2 inference on the Iris model,
# with the server and the load generator pinned to disjoint cores (taskset), measured in one run
# against the peers:
#   gangboost        gangboost-runtime: REST V2 JSON, REST with the binary tensor extension, gRPC
#   floor            a bare Go net/http handler returning a fixed V2 body (runtime/loadtest/floor)
#   floor-timeouts   the same with the read, write and idle deadlines gangboost's http.Server has
#   grpc-floor       a bare grpc-go server returning a fixed ModelInfer answer (runtime/loadtest/grpcfloor)
#   python           a Python V2 server as users run KServe's xgbserver today: FastAPI + uvicorn +
#                    xgboost from Debian (runtime/loadtest/pyserver.py)
# Beside req/s and p50/p99 it reports each server's CPU time per request (utime + stime from
# /proc/PID/stat over the measured run, divided by the requests answered): the figure that does
# not depend on how busy the machine is, or on the load generator's share of it. For gangboost
# also the heap allocations per request (go_memstats_mallocs_total from /metrics over the run).
# Then gangboost's resident memory and its start-to-ready time (exec to the first 200 on
# /v2/health/ready, polled every 1 ms, best of STARTS starts).
#
# Paired measurement: servers measured in turn see different moments of the machine, and on a
# shared VM the floor's own CPU per request moves by 1.5x between rounds, more than what
# separates the servers. So gangboost and each of its floors are also measured at once: both on
# the same server cores, each under its own load generator (both on the load cores), over the
# same seconds; whatever the machine does then falls on both. Their CPU per request is compared
# (req/s is not: the two share the cores). REST binary is paired with the floor answering the
# JSON request, as in the rounds in turn.

#
# Core split, for each P in SERVER_CORES (split_cores, scripts/loadtest-lib.sh): the servers run
# on the first P cores, one per physical core where there are enough, with GOMAXPROCS=P; the load
# generator (wrk, or runtime/loadtest/grpcload for gRPC) on the other cores, but not on the
# server cores' hyperthread siblings while any other core is left; when no core is left (P = all
# cores) it runs on the last core, shared with the server. The run prints the split. On a 2-core
# machine: P=1 is server on core 0, load on core 1.
#
# Settings (environment):
#   DURATION=5s WARMUP=1s CONNECTIONS=32 STARTS=5
#   BATCH_CONNECTIONS=256 the connections of the batching comparison: gangboost REST JSON with and
#                        without --enable_batching under that many concurrent one-row requests
#   SERVER_CORES="1 2"   server core counts measured (each at most the machine's)
#   ROUNDS=3             measure every server in turn ROUNDS times; each reports its median round,
#                        and each ratio is the median of the rounds' ratios (peers measured in turn);
#                        one round of either server moves by more than the goals' margin, and from
#                        three rounds on the report says when a goal lies inside the rounds' spread
#   PAIRED_ROUNDS=3      rounds of the paired measurement (0: none), below
#   RUNTIME_FLAGS=       extra gangboost-runtime flags (e.g. --enable_batching)
#   GANGBOOST_RUNTIME=bin/gangboost-runtime (built into a temporary folder when missing)
#   LOADTEST_TOOLS=      a folder holding the peers and load tools already built (floor, grpcfloor,
#                        grpcload, readytime, from runtime/loadtest): then no Go toolchain is
#                        needed, as on a machine the binaries were copied to
#   PYTHON=/usr/bin/python3 the Python server's interpreter
#   PYTHON_PEER=on       off: leave the Python server out (a machine without its Debian packages);
#                        the report then says it was not measured
#   LOAD_TEST_OUT=path   also write the figures as JSON there
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-32}
BATCH_CONNECTIONS=${BATCH_CONNECTIONS:-256}
STARTS=${STARTS:-5}
ROUNDS=${ROUNDS:-3}
PAIRED_ROUNDS=${PAIRED_ROUNDS:-3}
SERVER_CORES=${SERVER_CORES:-1 2}
RUNTIME_FLAGS=${RUNTIME_FLAGS:-}
PYTHON_PEER=${PYTHON_PEER:-on}
case $PYTHON_PEER in on | off) ;; *) echo "load-test: PYTHON_PEER=$PYTHON_PEER: say on or off" >&2; exit 1 ;; esac
# Debian's interpreter holds python3-fastapi, -uvicorn and -xgboost; a python3 earlier on PATH
# (pyenv, venv) usually does not.
python=${PYTHON:-/usr/bin/python3}
model=iris
model_dir=$root/runtime/testdata/models/iris
body='{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'
# The binary form of the same row: a JSON header, then the four FP32 values little-endian; the
# answer comes back binary too (binary_data_output).
bin_header='{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}],"parameters":{"binary_data_output":true}}'
bin_hex=$("$python" -c 'import struct, sys; print((sys.argv[1].encode() + struct.pack("<4f", 5.1, 3.5, 1.4, 0.2)).hex())' "$bin_header")
ncpu=$(nproc)
clk_tck=$(getconf CLK_TCK)

die() { echo "load-test: $*" >&2; exit 1; }

# shellcheck source=scripts/loadtest-lib.sh
. scripts/loadtest-lib.sh
require_tools wrk curl jq taskset
[ -n "${LOADTEST_TOOLS:-}" ] || require_tools go
[ "$PYTHON_PEER" = off ] || "$python" -c 'import fastapi, uvicorn, xgboost, numpy' 2>/dev/null ||
  die "$python lacks fastapi/uvicorn/xgboost/numpy: apt-get install python3-fastapi python3-uvicorn python3-xgboost python3-numpy (or PYTHON_PEER=off)"
# shellcheck disable=SC2086 # SERVER_CORES is a list
check_server_cores $SERVER_CORES
check_durations DURATION WARMUP

gbr=${GANGBOOST_RUNTIME:-$root/bin/gangboost-runtime}
if [ ! -x "$gbr" ]; then
  echo "building gangboost-runtime (no $gbr)"
  gbr=$work/gangboost-runtime
  CGO_ENABLED=0 go build -trimpath -o "$gbr" ./runtime/cmd/gangboost-runtime
fi
# The peers and load tools: each folder of runtime/loadtest is one (scripts/load-test-kit.sh
# builds the same).
for dir in runtime/loadtest/*/; do
  tool=$(basename "$dir")
  if [ -n "${LOADTEST_TOOLS:-}" ]; then
    [ -x "$LOADTEST_TOOLS/$tool" ] || die "LOADTEST_TOOLS: no $LOADTEST_TOOLS/$tool"
    ln -s "$(cd "$LOADTEST_TOOLS" && pwd)/$tool" "$work/$tool"
  else
    go build -o "$work/$tool" "./runtime/loadtest/$tool"
  fi
done
# The servers in this run, the Python one unless PYTHON_PEER=off.
servers=(gangboost gangboost-batching floor floor-timeouts grpc-floor)
[ "$PYTHON_PEER" = off ] || servers+=(python)

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
rss_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# mallocs PORT: gangboost's heap allocations so far.
mallocs() { curl -sf "http://127.0.0.1:$1/metrics" | awk '$1 == "go_memstats_mallocs_total" { printf "%.0f\n", $2 }'; }

declare -A gport

# bench NAME PROTOCOL SERVER ROUND [CONNECTIONS]: measures one protocol of one server under
# load and writes $work/P.NAME.ROUND.json with the load generator's figures, the server's CPU
# per request and, for gangboost, its allocations per request.
bench() {
  local name=$1 protocol=$2 server=$3 round=$4 conns=${5:-$CONNECTIONS} out=$work/$server_cores.$1.$4.json
  local t0 t1 m0="" m1=""
  # The warm-up is outside the measured window: its CPU and allocations are not the
  # measured requests'.
  run_load "$out.warm" "$protocol" "$server" "$WARMUP" "$conns"
  [[ "$server" = gangboost* ]] && m0=$(mallocs "${port[$server]}")
  t0=$(cpu_ticks "${pid[$server]}")
  local before
  before=$(loadavg)
  run_load "$out.raw" "$protocol" "$server" "$DURATION" "$conns"
  t1=$(cpu_ticks "${pid[$server]}")
  [[ "$server" = gangboost* ]] && m1=$(mallocs "${port[$server]}")
  jq --arg name "$name" --arg protocol "$protocol" --arg before "$before" --argjson conns "$conns" \
    --argjson ticks "$((t1 - t0))" --argjson hz "$clk_tck" --arg m0 "$m0" --arg m1 "$m1" '
    . + {name: $name, protocol: $protocol, connections: $conns, loadavg_before: $before,
         cpu_s: ($ticks / $hz), cpu_us_per_req: ($ticks / $hz * 1e6 / .requests),
         allocs_per_req: (if $m0 == "" then null else (($m1 | tonumber) - ($m0 | tonumber)) / .requests end)}
  ' "$out.raw" >"$out"
  printf '  %d core(s) round %d  %-18s %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  %6.1f µs CPU/req  (load average %s)\n' \
    "$server_cores" "$round" "$name" "$(jq .rps "$out")" "$(jq '.p50_us / 1000' "$out")" "$(jq '.p99_us / 1000' "$out")" \
    "$(jq .cpu_us_per_req "$out")" "$before"
}

# run_load OUT PROTOCOL SERVER DURATION [CONNECTIONS]: the load generator on the load cores
# against SERVER for DURATION, its JSON figures in OUT: wrk for REST (the JSON body, or for
# rest-binary the binary one), grpcload for gRPC.
run_load() {
  local out=$1 protocol=$2 server=$3 duration=$4 conns=${5:-$CONNECTIONS}
  local url="http://127.0.0.1:${port[$server]}/v2/models/$model/infer" env=(LOADTEST_BODY="$body")
  case $protocol in
    rest-json | rest-binary)
      if [ "$protocol" = rest-binary ]; then
        env=(LOADTEST_BODY_HEX="$bin_hex" LOADTEST_HEADER_LENGTH="${#bin_header}")
      fi
      env "${env[@]}" taskset -c "$load_cpus" wrk -t"$load_threads" -c"$conns" -d"$duration" -s runtime/loadtest/post.lua --latency "$url" \
        >"$out.wrk" ;;
    grpc)
      GOMAXPROCS=$load_threads taskset -c "$load_cpus" "$work/grpcload" -addr "127.0.0.1:${gport[$server]}" -model "$model" \
        -c "$conns" -d "$duration" -warmup 0s >"$out.wrk" ;;
  esac
  sed -n 's/^WRK_JSON //p' "$out.wrk" >"$out"
  [ -s "$out" ] || { cat "$out.wrk" >&2; die "no figures from the load generator for $server ($protocol)"; }
}

# run_pair OUT A PROTOCOL-A B PROTOCOL-B DURATION: run_load against A (figures in OUT.a) and
# against B (OUT.b) at once.
run_pair() {
  local la lb
  run_load "$1.a" "$3" "$2" "$6" &
  la=$!
  run_load "$1.b" "$5" "$4" "$6" &
  lb=$!
  wait "$la"
  wait "$lb"
}

# bench_pair NAME PROTOCOL SERVER PEER PEER-PROTOCOL ROUND: SERVER and PEER under load at once
# (a warm-up, then DURATION measured), each from its own load generator; writes
# $work/P.pair.NAME.ROUND.json with both servers' CPU per request and its ratio.
bench_pair() {
  local name=$1 protocol=$2 a=$3 b=$4 pprotocol=$5 round=$6 out=$work/$server_cores.pair.$1.$6
  local ta0 tb0 ta1 tb1
  run_pair "$out.warm" "$a" "$protocol" "$b" "$pprotocol" "$WARMUP"
  ta0=$(cpu_ticks "${pid[$a]}")
  tb0=$(cpu_ticks "${pid[$b]}")
  run_pair "$out" "$a" "$protocol" "$b" "$pprotocol" "$DURATION"
  ta1=$(cpu_ticks "${pid[$a]}")
  tb1=$(cpu_ticks "${pid[$b]}")
  jq -n --arg name "$name" --argjson round "$round" --argjson hz "$clk_tck" \
    --argjson ta "$((ta1 - ta0))" --argjson tb "$((tb1 - tb0))" --slurpfile ra "$out.a" --slurpfile rb "$out.b" '
    ($ta / $hz * 1e6 / $ra[0].requests) as $ca | ($tb / $hz * 1e6 / $rb[0].requests) as $cb |
    {name: $name, round: $round, cpu_us_per_req: $ca, peer_cpu_us_per_req: $cb, cpu_ratio: ($ca / $cb)}
  ' >"$out.json"
  printf '  %d core(s) paired %d   %-18s %6.1f µs CPU/req, its peer %6.1f: %5.2fx\n' "$server_cores" "$round" "$name" \
    "$(jq .cpu_us_per_req "$out.json")" "$(jq .peer_cpu_us_per_req "$out.json")" "$(jq .cpu_ratio "$out.json")"
}

# check_answers: one request of each form gets the answer the load test expects.
check_answers() {
  local url="http://127.0.0.1:${port[gangboost]}/v2/models/$model/infer" resp
  resp=$(curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "$url") || die "POST $url failed"
  jq -e '.outputs[0].name == "output-0" and .outputs[0].shape == [1, 3]' <<<"$resp" >/dev/null ||
    die "unexpected answer $resp"
  "$python" -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))' "$bin_hex" >"$work/binary.body"
  curl -sf -X POST -H "Inference-Header-Content-Length: ${#bin_header}" --data-binary @"$work/binary.body" \
    -D "$work/binary.headers" -o /dev/null "$url" || die "binary POST $url failed"
  grep -qi '^Inference-Header-Content-Length:' "$work/binary.headers" || die "binary answer without a binary part"
  resp=$(curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:${port[floor]}/v2/models/$model/infer") ||
    die "floor: POST failed"
  [ "$PYTHON_PEER" = off ] && return
  resp=$(curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:${port[python]}/v2/models/$model/infer") ||
    die "python: POST failed"
  jq -e '.outputs[0].shape == [1, 3]' <<<"$resp" >/dev/null || die "python: unexpected answer $resp"
}

echo "load test: single-row V2 infer on $model, $CONNECTIONS connections, $DURATION (warm-up $WARMUP) x $ROUNDS round(s), server cores: $SERVER_CORES, $ncpu CPUs, load average $(loadavg)"
loadavg_start=$(loadavg)

# Start-to-ready and RSS right after the model load, over STARTS fresh processes each.
p=$(free_port)
"$work/readytime" -n "$STARTS" -url "http://127.0.0.1:$p/v2/health/ready" -- \
  "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "$p" --grpc_port "$(free_port)" \
  >"$work/gangboost-ready.json"
py_rss=null py_impl=""
echo null >"$work/python-ready.json"
if [ "$PYTHON_PEER" = on ]; then
  p=$(free_port)
  "$work/readytime" -n "$STARTS" -url "http://127.0.0.1:$p/v2/health/ready" -- \
    "$python" runtime/loadtest/pyserver.py --model_dir "$model_dir" --model_name "$model" --port "$p" \
    >"$work/python-ready.json"
fi

splits=()
for server_cores in $SERVER_CORES; do
  split_cores "$server_cores"
  splits+=("$(jq -n --argjson p "$server_cores" --arg s "$split" '{server_cores: $p, split: $s}')")
  echo "$server_cores server core(s): $split"

  # The servers stay up (idle ones cost nothing) and are measured one at a time, in turn, so a
  # change in the machine's background load falls on all of them alike.
  for name in "${servers[@]}"; do port[$name]=$(free_port); done
  gport[gangboost]=$(free_port)
  gport[grpc-floor]=${port[grpc-floor]}
  # shellcheck disable=SC2086 # RUNTIME_FLAGS is a list of flags
  start gangboost "$server_cpus" "curl -sf http://127.0.0.1:${port[gangboost]}/v2/health/ready" \
    "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "${port[gangboost]}" --grpc_port "${gport[gangboost]}" $RUNTIME_FLAGS
  # shellcheck disable=SC2086
  start gangboost-batching "$server_cpus" "curl -sf http://127.0.0.1:${port[gangboost-batching]}/v2/health/ready" \
    "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "${port[gangboost-batching]}" --grpc_port 0 --enable_batching $RUNTIME_FLAGS
  start floor "$server_cpus" "curl -sf http://127.0.0.1:${port[floor]}/v2/health/ready" \
    "$work/floor" --port "${port[floor]}"
  start floor-timeouts "$server_cpus" "curl -sf http://127.0.0.1:${port[floor-timeouts]}/v2/health/ready" \
    "$work/floor" --port "${port[floor-timeouts]}" --server_timeouts
  start grpc-floor "$server_cpus" "$work/grpcload -ready -d 100ms -addr 127.0.0.1:${gport[grpc-floor]}" \
    "$work/grpcfloor" --port "${gport[grpc-floor]}"
  if [ "$PYTHON_PEER" = on ]; then
    start python "$server_cpus" "curl -sf http://127.0.0.1:${port[python]}/v2/health/ready" \
      "$python" runtime/loadtest/pyserver.py --model_dir "$model_dir" --model_name "$model" --port "${port[python]}"
  fi
  check_answers
  if [ "$server_cores" = "${SERVER_CORES%% *}" ]; then
    rss_idle=$(rss_kib "${pid[gangboost]}" VmRSS)
    if [ "$PYTHON_PEER" = on ]; then
      py_rss=$(rss_kib "${pid[python]}" VmRSS) py_impl=$(sed -n 's/^pyserver: //p' "$work/python.log")
    fi
  fi
  for round in $(seq "$ROUNDS"); do
    bench gangboost-json rest-json gangboost "$round"
    bench floor rest-json floor "$round"
    bench floor-timeouts rest-json floor-timeouts "$round"
    bench gangboost-binary rest-binary gangboost "$round"
    bench gangboost-grpc grpc gangboost "$round"
    bench grpc-floor grpc grpc-floor "$round"
    [ "$PYTHON_PEER" = off ] || bench python rest-json python "$round"
  done
  rss_after=$(rss_kib "${pid[gangboost]}" VmRSS)
  hwm_after=$(rss_kib "${pid[gangboost]}" VmHWM)
  # The batching comparison last: its connections' buffers are not the memory figure's.
  for round in $(seq "$ROUNDS"); do
    bench "gangboost-json-c$BATCH_CONNECTIONS" rest-json gangboost "$round" "$BATCH_CONNECTIONS"
    bench "gangboost-batching-c$BATCH_CONNECTIONS" rest-json gangboost-batching "$round" "$BATCH_CONNECTIONS"
  done
  for round in $(seq "$PAIRED_ROUNDS"); do
    bench_pair json-floor rest-json gangboost floor rest-json "$round"
    bench_pair json-floor-timeouts rest-json gangboost floor-timeouts rest-json "$round"
    bench_pair binary-floor rest-binary gangboost floor rest-json "$round"
    bench_pair grpc-floor grpc gangboost grpc-floor grpc "$round"
  done
  for name in json-floor json-floor-timeouts binary-floor grpc-floor; do
    files=()
    for round in $(seq "$PAIRED_ROUNDS"); do files+=("$work/$server_cores.pair.$name.$round.json"); done
    if [ "${#files[@]}" -gt 0 ]; then
      jq -s --argjson p "$server_cores" --arg name "$name" \
        'map(.cpu_ratio) as $r | {server_cores: $p, name: $name, rounds_cpu_ratio: $r,
          cpu_ratio: ($r | sort | .[(length - 1) / 2 | floor])}' "${files[@]}" >"$work/paired.$server_cores.$name.json"
    fi
  done
  for name in "${servers[@]}"; do stop "$name"; done
  # Each server's figures are those of its median round by req/s; its rounds' req/s and CPU per
  # request, in round order, give the ratios to the peer measured beside it in the same round.
  names=(gangboost-json floor floor-timeouts gangboost-binary gangboost-grpc grpc-floor
    "gangboost-json-c$BATCH_CONNECTIONS" "gangboost-batching-c$BATCH_CONNECTIONS")
  [ "$PYTHON_PEER" = off ] || names+=(python)
  for name in "${names[@]}"; do
    files=()
    for round in $(seq "$ROUNDS"); do files+=("$work/$server_cores.$name.$round.json"); done
    jq -s --argjson p "$server_cores" \
      'map(.rps) as $rps | map(.cpu_us_per_req) as $cpu | sort_by(.rps) as $r |
       $r[(length - 1) / 2 | floor] + {server_cores: $p, rounds_rps: $rps, rounds_cpu: $cpu}' \
      "${files[@]}" >"$work/result.$server_cores.$name.json"
  done
  jq -n --argjson p "$server_cores" --argjson rss "$rss_after" --argjson hwm "$hwm_after" \
    '{server_cores: $p, rss_after_load_mib: ($rss / 1024), rss_peak_mib: ($hwm / 1024)}' >"$work/rss.$server_cores.json"
done

report=$(jq -n \
  --slurpfile runs <(cat "$work"/result.*.json) --slurpfile rss <(cat "$work"/rss.*.json) \
  --slurpfile paired <(cat "$work"/paired.*.json 2>/dev/null || true) --argjson paired_rounds "$PAIRED_ROUNDS" \
  --slurpfile splits <(printf '%s\n' "${splits[@]}") \
  --slurpfile gr "$work/gangboost-ready.json" --slurpfile pr "$work/python-ready.json" \
  --arg duration "$DURATION" --arg warmup "$WARMUP" --argjson connections "$CONNECTIONS" \
  --argjson cpus "$ncpu" --arg flags "$RUNTIME_FLAGS" \
  --arg batched "gangboost-batching-c$BATCH_CONNECTIONS" --arg unbatched "gangboost-json-c$BATCH_CONNECTIONS" \
  --arg loadavg_start "$loadavg_start" --arg loadavg_end "$(loadavg)" --arg py_impl "$py_impl" \
  --argjson rss_idle "$rss_idle" --argjson py_rss "$py_rss" --argjson rounds "$ROUNDS" '
  def run(p; n): $runs | map(select(.server_cores == p and .name == n)) | .[0];
  # The median over the rounds of figure k of server a against that of its peer b in the same
  # round: a busy machine moves both alike within a round, and rounds apart by 2x.
  def rounds(p; a; b; k): run(p; a)[k] as $x | run(p; b)[k] as $y | [range(0; $x | length) | $x[.] / $y[.]];
  def ratio(p; a; b; k): rounds(p; a; b; k) | sort | .[(length - 1) / 2 | floor];
  def python_ratio(p): if $pr[0] == null then null else ratio(p; "gangboost-json"; "python"; "rounds_rps") end;
  {
    model: "iris", rows_per_request: 1, runtime_flags: $flags,
    load: {connections: $connections, duration: $duration, warmup: $warmup, rounds: $rounds, paired_rounds: $paired_rounds},
    machine: {cpus: $cpus, loadavg_start: $loadavg_start, loadavg_end: $loadavg_end},
    core_splits: $splits,
    runs: $runs,
    ratios: [$splits[] | .server_cores as $p | {
      server_cores: $p,
      json_to_floor_rps: ratio($p; "gangboost-json"; "floor"; "rounds_rps"),
      json_to_floor_rps_rounds: rounds($p; "gangboost-json"; "floor"; "rounds_rps"),
      json_to_floor_cpu: ratio($p; "gangboost-json"; "floor"; "rounds_cpu"),
      json_to_floor_cpu_rounds: rounds($p; "gangboost-json"; "floor"; "rounds_cpu"),
      json_to_floor_timeouts_cpu: ratio($p; "gangboost-json"; "floor-timeouts"; "rounds_cpu"),
      binary_to_floor_rps: ratio($p; "gangboost-binary"; "floor"; "rounds_rps"),
      binary_to_floor_cpu: ratio($p; "gangboost-binary"; "floor"; "rounds_cpu"),
      grpc_to_floor_rps: ratio($p; "gangboost-grpc"; "grpc-floor"; "rounds_rps"),
      grpc_to_floor_rps_rounds: rounds($p; "gangboost-grpc"; "grpc-floor"; "rounds_rps"),
      grpc_to_floor_cpu: ratio($p; "gangboost-grpc"; "grpc-floor"; "rounds_cpu"),
      json_to_python_rps: python_ratio($p),
      batching_rps: ratio($p; $batched; $unbatched; "rounds_rps"),
      batching_cpu: ratio($p; $batched; $unbatched; "rounds_cpu")
    }],
    paired: $paired,
    gangboost: {
      rss_loaded_idle_mib: ($rss_idle / 1024), after_load: $rss,
      ready_ms_best: $gr[0].best_ms, ready_ms_median: $gr[0].median_ms, ready_ms_all: $gr[0].ready_ms,
      rss_at_ready_mib: ($gr[0].rss_kib | min / 1024)
    },
    python: (if $pr[0] == null then null else {
      server: $py_impl, rss_loaded_idle_mib: ($py_rss / 1024),
      ready_ms_best: $pr[0].best_ms, ready_ms_median: $pr[0].median_ms
    } end),
    goals: {
      json_floor_rps_min: 0.9, json_floor_cpu_max: 1.15, grpc_floor_rps_min: 0.9,
      python_ratio_min: 10, rss_mib_max: 30, ready_ms_max: 100
    }
  }')

echo
# The table README's performance section is made of (markdown).
jq -r '
  def f(x; n): if x == null then "" else (x * pow(10; n) | round) / pow(10; n) | tostring end;
  "| server cores | server | protocol | connections | req/s | p50 ms | p99 ms | CPU µs/req | allocs/req | errors |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  (.runs | sort_by(.server_cores)[] |
    "| \(.server_cores) | \(.name) | \(.protocol) | \(.connections) | \(f(.rps; 0)) | \(f(.p50_us / 1000; 3)) | \(f(.p99_us / 1000; 3)) | \(f(.cpu_us_per_req; 1)) | \(f(.allocs_per_req; 1)) | \(.errors | .connect + .read + .write + .status + .timeout) |"),
  "",
  (.core_splits[] | "\(.server_cores) server core(s): \(.split)")
' <<<"$report"
jq -r --arg bc "$BATCH_CONNECTIONS" '
  def f(x; n): (x * pow(10; n) | round) / pow(10; n) | tostring;
  def met(c): if c then "met" else "NOT met" end;
  # A goal on a ratio: met or not by the median of the rounds, and, with three rounds or more,
  # whether the goal lies inside the rounds'"'"' interquartile range: a reading this run does not
  # settle, as the next run'"'"'s median may land on the other side. The quartiles are rounds
  # themselves, taken outward (three rounds: the lowest and the highest).
  def quartile(r; q): r | sort | .[(length - 1) * q | if q < 0.5 then floor else ceil end];
  def goal(v; r; op; g):
    (if op == ">=" then v >= g else v <= g end) as $ok |
    "goal \(op) \(g): \(met($ok))" +
    (if (r | length) >= 3 and quartile(r; 0.25) <= g and g <= quartile(r; 0.75)
     then ", unsettled: inside the rounds'"'"' interquartile range \(f(quartile(r; 0.25); 2))x-\(f(quartile(r; 0.75); 2))x"
     else "" end);
  "",
  (.goals as $g | .ratios[] |
    "\(.server_cores) core(s): REST JSON / floor \(f(.json_to_floor_rps; 2))x req/s (\(goal(.json_to_floor_rps; .json_to_floor_rps_rounds; ">="; $g.json_floor_rps_min))), \(f(.json_to_floor_cpu; 2))x CPU/req (\(goal(.json_to_floor_cpu; .json_to_floor_cpu_rounds; "<="; $g.json_floor_cpu_max)))",
    "           REST JSON / floor with the runtime'"'"'s timeouts \(f(.json_to_floor_timeouts_cpu; 2))x CPU/req",
    "           REST binary / floor \(f(.binary_to_floor_rps; 2))x req/s, \(f(.binary_to_floor_cpu; 2))x CPU/req",
    "           gRPC / gRPC floor \(f(.grpc_to_floor_rps; 2))x req/s (\(goal(.grpc_to_floor_rps; .grpc_to_floor_rps_rounds; ">="; $g.grpc_floor_rps_min))), \(f(.grpc_to_floor_cpu; 2))x CPU/req",
    (if .json_to_python_rps == null then "           REST JSON / python: not measured (PYTHON_PEER=off)"
     else "           REST JSON / python \(f(.json_to_python_rps; 1))x req/s (goal >= \($g.python_ratio_min): \(met(.json_to_python_rps >= $g.python_ratio_min)))" end),
    "           --enable_batching under \($bc) connections: \(f(.batching_rps; 2))x req/s, \(f(.batching_cpu; 2))x CPU/req of the same server without it"),
  (.goals as $g | .paired as $pr | .core_splits[] | .server_cores as $p |
    ($pr | map(select(.server_cores == $p)) | INDEX(.name)) as $x |
    select($x | length > 0) |
    "\($p) core(s), paired (at once on the same cores, \($x["json-floor"].rounds_cpu_ratio | length) rounds): REST JSON / floor \(f($x["json-floor"].cpu_ratio; 2))x CPU/req (\(goal($x["json-floor"].cpu_ratio; $x["json-floor"].rounds_cpu_ratio; "<="; $g.json_floor_cpu_max)); rounds \($x["json-floor"].rounds_cpu_ratio | map(f(.; 2) + "x") | join(" "))), / floor with the runtime'"'"'s timeouts \(f($x["json-floor-timeouts"].cpu_ratio; 2))x, REST binary / floor \(f($x["binary-floor"].cpu_ratio; 2))x, gRPC / gRPC floor \(f($x["grpc-floor"].cpu_ratio; 2))x"),
  (.gangboost.after_load[] | "gangboost RSS       \(.server_cores) core(s): \(f(.rss_after_load_mib; 1)) MiB after the load, peak \(f(.rss_peak_mib; 1)) MiB"),
  "gangboost RSS       \(f(.gangboost.rss_loaded_idle_mib; 1)) MiB loaded and idle (goal for the peak <= \(.goals.rss_mib_max))",
  "gangboost ready     \(f(.gangboost.ready_ms_best; 1)) ms best, \(f(.gangboost.ready_ms_median; 1)) ms median of \(.gangboost.ready_ms_all | length) starts (goal <= \(.goals.ready_ms_max): \(met(.gangboost.ready_ms_best <= .goals.ready_ms_max)))",
  (if .python == null then "python              not measured (PYTHON_PEER=off)"
   else "python              \(f(.python.rss_loaded_idle_mib; 1)) MiB loaded, ready \(f(.python.ready_ms_best; 0)) ms best; \(.python.server)" end),
  "load average        \(.machine.loadavg_start) at start, \(.machine.loadavg_end) at end, \(.machine.cpus) CPUs"
' <<<"$report"

if [ -n "${LOAD_TEST_OUT:-}" ]; then
  jq . <<<"$report" >"$LOAD_TEST_OUT"
  echo "figures written to $LOAD_TEST_OUT"
fi
