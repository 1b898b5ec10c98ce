#!/usr/bin/env bash
# Load test of gangboost-runtime (`make load-test`): single-row V2 REST inference on the Iris
# model, measured in one run and under the same wrk settings against
#   gangboost  gangboost-runtime (REST V2 JSON, one row of 4 features)
#   floor      a bare Go net/http handler returning a fixed V2 body (runtime/loadtest/floor)
#   python     a Python V2 server as users run KServe's xgbserver today: FastAPI + uvicorn +
#              xgboost from Debian (runtime/loadtest/pyserver.py)
# plus gangboost's resident memory with the model loaded and its start-to-ready time (exec to
# the first 200 on /v2/health/ready, polled every 1 ms, best of STARTS starts).
#
# Everything runs on 127.0.0.1; wrk shares the CPUs with the server under test, the same way for
# all three. Settings (environment):
#   DURATION=10s WARMUP=2s THREADS=2 CONNECTIONS=32 STARTS=5
#   ROUNDS=1             measure the three servers in turn ROUNDS times; each reports its median
#   GANGBOOST_RUNTIME=bin/gangboost-runtime (built into a temporary folder when missing)
#   LOAD_TEST_OUT=path   also write the figures as JSON there
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-32}
STARTS=${STARTS:-5}
ROUNDS=${ROUNDS:-1}
# Debian's interpreter holds python3-fastapi, -uvicorn and -xgboost; a python3 earlier on PATH
# (pyenv, venv) usually does not.
python=/usr/bin/python3
model=iris
model_dir=$root/runtime/testdata/models/iris
body='{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'

die() { echo "load-test: $*" >&2; exit 1; }

for tool in wrk curl jq go; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/deps.sh installs the Debian packages)"
done
"$python" -c 'import fastapi, uvicorn, xgboost, numpy' 2>/dev/null ||
  die "$python lacks fastapi/uvicorn/xgboost/numpy: apt-get install python3-fastapi python3-uvicorn python3-xgboost python3-numpy"

work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gbr=${GANGBOOST_RUNTIME:-$root/bin/gangboost-runtime}
if [ ! -x "$gbr" ]; then
  echo "building gangboost-runtime (no $gbr)"
  gbr=$work/gangboost-runtime
  CGO_ENABLED=0 go build -trimpath -o "$gbr" ./runtime/cmd/gangboost-runtime
fi
go build -o "$work/floor" ./runtime/loadtest/floor
go build -o "$work/readytime" ./runtime/loadtest/readytime

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
rss_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

declare -A pid port

# start NAME COMMAND...: starts a server in the background (its port in ${port[NAME]}) and waits
# until it answers 200 on /v2/health/ready.
start() {
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  pid[$name]=$!
  pids+=("${pid[$name]}")
  local i
  for i in $(seq 600); do
    curl -sf -o /dev/null "http://127.0.0.1:${port[$name]}/v2/health/ready" && return 0
    kill -0 "${pid[$name]}" 2>/dev/null || { cat "$work/$name.log" >&2; die "$name exited before it was ready"; }
    sleep 0.05
  done
  die "$name not ready on port ${port[$name]} within 30 s"
}

# bench NAME ROUND: checks one answer, warms up, then measures; writes $work/NAME.ROUND.json.
bench() {
  local name=$1 round=$2 url="http://127.0.0.1:${port[$1]}/v2/models/$model/infer" resp out
  resp=$(curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "$url") ||
    die "$name: POST $url failed"
  jq -e '.outputs[0].name == "output-0" and .outputs[0].shape == [1, 3]' <<<"$resp" >/dev/null ||
    die "$name: unexpected answer $resp"
  LOADTEST_BODY=$body wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WARMUP" -s runtime/loadtest/post.lua "$url" >/dev/null
  local before after
  before=$(loadavg)
  LOADTEST_BODY=$body wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s runtime/loadtest/post.lua --latency "$url" \
    >"$work/$name.wrk"
  after=$(loadavg)
  out=$work/$name.$round.json
  sed -n 's/^WRK_JSON //p' "$work/$name.wrk" |
    jq --arg before "$before" --arg after "$after" '. + {loadavg_before: $before, loadavg_after: $after}' >"$out"
  [ -s "$out" ] || { cat "$work/$name.wrk" >&2; die "$name: no figures from wrk"; }
  printf '  round %d  %-9s %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  (load average %s)\n' "$round" "$name" \
    "$(jq .rps "$out")" "$(jq '.p50_us / 1000' "$out")" "$(jq '.p99_us / 1000' "$out")" "$before"
}

echo "load test: single-row V2 infer on $model, wrk -t$THREADS -c$CONNECTIONS -d$DURATION (warm-up $WARMUP) x $ROUNDS round(s), $(nproc) CPUs, load average $(loadavg)"
loadavg_start=$(loadavg)

# Start-to-ready and RSS right after the model load, over STARTS fresh processes each.
p=$(free_port)
"$work/readytime" -n "$STARTS" -url "http://127.0.0.1:$p/v2/health/ready" -- \
  "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "$p" --grpc_port "$(free_port)" \
  >"$work/gangboost-ready.json"
p=$(free_port)
"$work/readytime" -n "$STARTS" -url "http://127.0.0.1:$p/v2/health/ready" -- \
  "$python" runtime/loadtest/pyserver.py --model_dir "$model_dir" --model_name "$model" --port "$p" \
  >"$work/python-ready.json"

# The three servers stay up (idle ones cost nothing) and are measured one at a time, in turn,
# so a change in the machine's background load falls on all of them alike.
for name in gangboost floor python; do port[$name]=$(free_port); done
start gangboost "$gbr" --model_name "$model" --model_dir "$model_dir" --http_port "${port[gangboost]}" --grpc_port "$(free_port)"
start floor "$work/floor" --port "${port[floor]}"
start python "$python" runtime/loadtest/pyserver.py --model_dir "$model_dir" --model_name "$model" --port "${port[python]}"
rss_idle=$(rss_kib "${pid[gangboost]}" VmRSS)
py_rss=$(rss_kib "${pid[python]}" VmRSS)
py_impl=$(sed -n 's/^pyserver: //p' "$work/python.log")
for round in $(seq "$ROUNDS"); do
  for name in gangboost floor python; do bench "$name" "$round"; done
done
rss_after=$(rss_kib "${pid[gangboost]}" VmRSS)
hwm_after=$(rss_kib "${pid[gangboost]}" VmHWM)

# Each server's figures are those of its median round by req/s.
for name in gangboost floor python; do
  jq -s 'sort_by(.rps) as $r | $r[(length - 1) / 2 | floor] + {rounds_rps: map(.rps)}' "$work/$name".*.json >"$work/$name.json"
done

report=$(jq -n \
  --slurpfile g "$work/gangboost.json" --slurpfile f "$work/floor.json" --slurpfile p "$work/python.json" \
  --slurpfile gr "$work/gangboost-ready.json" --slurpfile pr "$work/python-ready.json" \
  --arg duration "$DURATION" --arg warmup "$WARMUP" --argjson threads "$THREADS" \
  --argjson connections "$CONNECTIONS" --argjson cpus "$(nproc)" \
  --arg loadavg_start "$loadavg_start" --arg loadavg_end "$(loadavg)" --arg py_impl "$py_impl" \
  --argjson rss_idle "$rss_idle" --argjson rss_after "$rss_after" --argjson hwm_after "$hwm_after" \
  --argjson py_rss "$py_rss" --argjson rounds "$ROUNDS" '
  {
    model: "iris", rows_per_request: 1, protocol: "V2 REST JSON",
    wrk: {threads: $threads, connections: $connections, duration: $duration, warmup: $warmup, rounds: $rounds},
    machine: {cpus: $cpus, loadavg_start: $loadavg_start, loadavg_end: $loadavg_end},
    servers: {gangboost: $g[0], floor: $f[0], python: ($p[0] + {server: $py_impl})},
    ratios: {
      gangboost_to_floor_rps: ($g[0].rps / $f[0].rps),
      gangboost_to_python_rps: ($g[0].rps / $p[0].rps)
    },
    gangboost: {
      rss_loaded_idle_mib: ($rss_idle / 1024), rss_after_load_mib: ($rss_after / 1024),
      rss_peak_mib: ($hwm_after / 1024),
      ready_ms_best: $gr[0].best_ms, ready_ms_median: $gr[0].median_ms, ready_ms_all: $gr[0].ready_ms,
      rss_at_ready_mib: ($gr[0].rss_kib | min / 1024)
    },
    python: {
      rss_loaded_idle_mib: ($py_rss / 1024),
      ready_ms_best: $pr[0].best_ms, ready_ms_median: $pr[0].median_ms
    },
    goals: {
      floor_ratio_min: 0.8, python_ratio_min: 10, rss_mib_max: 30, ready_ms_max: 100
    }
  }')

jq -r '
  def f(x; n): (x * pow(10; n) | round) / pow(10; n) | tostring;
  def row(n; s): [n, f(s.rps; 0), f(s.p50_us / 1000; 3), f(s.p99_us / 1000; 3),
    (s.errors | .connect + .read + .write + .status + .timeout | tostring), s.loadavg_before] | @tsv;
  (["server", "req/s", "p50 ms", "p99 ms", "errors", "load average"] | @tsv),
  row("gangboost"; .servers.gangboost),
  row("floor"; .servers.floor),
  row("python"; .servers.python)
' <<<"$report" | column -t -s $'\t' -o '  '
jq -r '
  def f(x; n): (x * pow(10; n) | round) / pow(10; n) | tostring;
  def met(c): if c then "met" else "NOT met" end;
  "",
  "gangboost / floor   \(f(.ratios.gangboost_to_floor_rps; 3))x req/s (goal >= \(.goals.floor_ratio_min): \(met(.ratios.gangboost_to_floor_rps >= .goals.floor_ratio_min)))",
  "gangboost / python  \(f(.ratios.gangboost_to_python_rps; 1))x req/s (goal >= \(.goals.python_ratio_min): \(met(.ratios.gangboost_to_python_rps >= .goals.python_ratio_min)))",
  "gangboost RSS       \(f(.gangboost.rss_loaded_idle_mib; 1)) MiB loaded, \(f(.gangboost.rss_after_load_mib; 1)) MiB after the load test, peak \(f(.gangboost.rss_peak_mib; 1)) MiB (goal <= \(.goals.rss_mib_max): \(met(.gangboost.rss_peak_mib <= .goals.rss_mib_max)))",
  "gangboost ready     \(f(.gangboost.ready_ms_best; 1)) ms best, \(f(.gangboost.ready_ms_median; 1)) ms median of \(.gangboost.ready_ms_all | length) starts (goal <= \(.goals.ready_ms_max): \(met(.gangboost.ready_ms_best <= .goals.ready_ms_max)))",
  "python              \(f(.python.rss_loaded_idle_mib; 1)) MiB loaded, ready \(f(.python.ready_ms_best; 0)) ms best; \(.servers.python.server)",
  "load average        \(.machine.loadavg_start) at start, \(.machine.loadavg_end) at end, \(.machine.cpus) CPUs"
' <<<"$report"

if [ -n "${LOAD_TEST_OUT:-}" ]; then
  jq . <<<"$report" >"$LOAD_TEST_OUT"
  echo "figures written to $LOAD_TEST_OUT"
fi
