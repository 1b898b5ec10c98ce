#!/usr/bin/env bash
# When --enable_batching pays (`make load-test-batching`): gangboost-runtime with and without it
# on models of growing size, under growing numbers of concurrent one-row requests, with the
# server and the load generator on disjoint cores as in scripts/load-test.sh (split_cores: the
# server on P cores with GOMAXPROCS=P, wrk on the others but not on the server cores' hyperthread
# siblings; with none left, on the last, shared).
#
# A merged batch runs the batch kernel, which keeps a tree in cache across a block of rows, so
# batching pays when a row's evaluation is large against handing a request to the batcher and
# back. The models show where that is: trained here by gangboost-train (libxgboost, hist,
# binary:logistic, depth DEPTH, learning rate 0.05) on a synthetic data set of FEATURES columns
# and 20,000 rows, one model per tree count in TREES. Both servers of a model stay up and are
# measured in turn, ROUNDS times: each figure is its median round, each ratio the median of the
# rounds' ratios (batching's over the same server's without it in the same round). CPU per
# request is the server's utime + stime over the measured run divided by the requests answered.
#
# Settings (environment):
#   TREES="100 500 1000 2000" DEPTH=8 FEATURES=20
#   CONNECTIONS="1 32 256"   concurrent one-row requests (wrk connections), each measured
#   SERVER_CORES="1 2"       server core counts measured (each at most the machine's)
#   DURATION=4s WARMUP=1s ROUNDS=3
#   GANGBOOST_RUNTIME=bin/gangboost-runtime GANGBOOST_TRAIN=bin/gangboost-train
#   BATCHING_TEST_OUT=path   also write the figures as JSON there
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

TREES=${TREES:-100 500 1000 2000}
DEPTH=${DEPTH:-8}
FEATURES=${FEATURES:-20}
CONNECTIONS=${CONNECTIONS:-1 32 256}
SERVER_CORES=${SERVER_CORES:-1 2}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-3}
gbr=${GANGBOOST_RUNTIME:-$root/bin/gangboost-runtime}
train=${GANGBOOST_TRAIN:-$root/bin/gangboost-train}
ncpu=$(nproc)
clk_tck=$(getconf CLK_TCK)

die() { echo "batching-test: $*" >&2; exit 1; }

# shellcheck source=scripts/loadtest-lib.sh
. scripts/loadtest-lib.sh
require_tools wrk curl jq taskset awk
for bin in "$gbr" "$train"; do
  [ -x "$bin" ] || die "$bin not found: make build makes it"
done
[ "$ncpu" -ge 2 ] || die "needs 2 cores (server and load generator apart)"
# shellcheck disable=SC2086 # SERVER_CORES is a list
check_server_cores $SERVER_CORES
for n in $TREES $CONNECTIONS $DEPTH $FEATURES $ROUNDS; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "TREES, CONNECTIONS, DEPTH, FEATURES and ROUNDS are positive whole numbers, not $n"
done
[ "$DEPTH" -le 16 ] && [ "$FEATURES" -le 1000 ] || die "DEPTH at most 16, FEATURES at most 1000"
for n in $TREES; do [ "$n" -le 20000 ] || die "TREES: $n is more than 20000 trees"; done
check_durations DURATION WARMUP

# The data set: FEATURES standard normal columns and a label from a linear part, an interaction
# and a sine of them plus noise, so that deep trees keep finding splits. One request's row is
# the first row's features.
awk -v n=20000 -v f="$FEATURES" 'BEGIN {
  srand(1)
  for (j = 0; j < f; j++) printf "f%d,", j
  print "y"
  for (i = 0; i < n; i++) {
    s = 0
    for (j = 0; j < f; j++) {
      x[j] = sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand())
      s += x[j] * (j % 5 - 2)
      printf "%.4f,", x[j]
    }
    s += 2 * sin(3 * x[0]) + x[1] * x[f > 2 ? 2 : 0] + 2 * (sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand()))
    print (s > 0 ? 1 : 0)
  }
}' >"$work/train.csv"
row=$(sed -n 2p "$work/train.csv" | cut -d, -f1-"$FEATURES")
body="{\"inputs\":[{\"name\":\"input-0\",\"shape\":[1,$FEATURES],\"datatype\":\"FP32\",\"data\":[$row]}]}"

echo "batching test: one-row V2 JSON requests, binary:logistic of depth $DEPTH over $FEATURES features, trees: $TREES;" \
  "connections: $CONNECTIONS; $DURATION (warm-up $WARMUP) x $ROUNDS round(s), server cores: $SERVER_CORES, $ncpu CPUs"
for trees in $TREES; do
  echo "training $trees trees with gangboost-train"
  "$train" --train "$work/train.csv" --label y --objective binary:logistic --max-depth "$DEPTH" --eta 0.05 \
    --num-round "$trees" --nthread "$ncpu" --seed 1 --log-every 100000 --model-dir "$work/models/t$trees" \
    >"$work/train.$trees.log" 2>&1 || { cat "$work/train.$trees.log" >&2; die "training $trees trees failed"; }
done

# start_runtime NAME MODEL-DIR [FLAG...]: gangboost-runtime serving MODEL-DIR as model m on the
# server cores, once it is ready.
start_runtime() {
  local name=$1 dir=$2
  shift 2
  port[$name]=$(free_port)
  start "$name" "$server_cpus" "curl -sf http://127.0.0.1:${port[$name]}/v2/health/ready" \
    "$gbr" --model_name m --model_dir "$dir" --http_port "${port[$name]}" --grpc_port 0 "$@"
}

# answer NAME: the outputs of the request on server NAME.
answer() {
  curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:${port[$1]}/v2/models/m/infer" | jq -c .outputs
}

# bench OUT SERVER CONNECTIONS: wrk against SERVER (a warm-up, then DURATION measured); OUT gets
# wrk's figures and the server's CPU per request.
bench() {
  local out=$1 server=$2 conns=$3 t0 t1
  local url="http://127.0.0.1:${port[$server]}/v2/models/m/infer"
  LOADTEST_BODY="$body" taskset -c "$load_cpus" wrk -t"$load_threads" -c"$conns" -d"$WARMUP" -s runtime/loadtest/post.lua "$url" >/dev/null
  t0=$(cpu_ticks "${pid[$server]}")
  LOADTEST_BODY="$body" taskset -c "$load_cpus" wrk -t"$load_threads" -c"$conns" -d"$DURATION" -s runtime/loadtest/post.lua \
    --latency "$url" >"$out.wrk"
  t1=$(cpu_ticks "${pid[$server]}")
  sed -n 's/^WRK_JSON //p' "$out.wrk" | jq --argjson ticks "$((t1 - t0))" --argjson hz "$clk_tck" \
    '. + {cpu_us_per_req: ($ticks / $hz * 1e6 / .requests)}' >"$out"
  [ -s "$out" ] || { cat "$out.wrk" >&2; die "no figures from wrk for $server"; }
  jq -e '.errors | .connect + .read + .write + .status + .timeout == 0' "$out" >/dev/null ||
    die "$server answered with errors under $conns connections: $(jq -c .errors "$out")"
}

for server_cores in $SERVER_CORES; do
  split_cores "$server_cores"
  echo "$server_cores server core(s): $split"
  for trees in $TREES; do
    start_runtime plain "$work/models/t$trees"
    start_runtime batching "$work/models/t$trees" --enable_batching
    [ "$(answer plain)" = "$(answer batching)" ] || die "$trees trees: the answers differ: $(answer plain) without batching, $(answer batching) with it"
    for conns in $CONNECTIONS; do
      for round in $(seq "$ROUNDS"); do
        for server in plain batching; do
          bench "$work/$server_cores.$trees.$conns.$server.$round.json" "$server" "$conns"
        done
      done
      # The median round of each server, and the median of the rounds' ratios.
      jq -s --argjson p "$server_cores" --argjson trees "$trees" --argjson conns "$conns" --argjson rounds "$ROUNDS" '
        def median: sort | .[(length - 1) / 2 | floor];
        def pick(r): r | sort_by(.rps) | .[(length - 1) / 2 | floor] | {rps, p50_us, p99_us, cpu_us_per_req};
        .[:$rounds] as $plain | .[$rounds:] as $batch |
        {server_cores: $p, trees: $trees, connections: $conns, plain: pick($plain), batching: pick($batch),
         rps_ratio: ([range(0; $rounds) | $batch[.].rps / $plain[.].rps] | median),
         cpu_ratio: ([range(0; $rounds) | $batch[.].cpu_us_per_req / $plain[.].cpu_us_per_req] | median)}
      ' $(for s in plain batching; do for r in $(seq "$ROUNDS"); do echo "$work/$server_cores.$trees.$conns.$s.$r.json"; done; done) \
        >"$work/result.$server_cores.$trees.$conns.json"
      jq -r '"  \(.server_cores) core(s) \(.trees) trees \(.connections) connections: \(.plain.rps | round) -> \(.batching.rps | round) req/s (\((.rps_ratio * 100 | round) / 100)x), \((.plain.cpu_us_per_req * 10 | round) / 10) -> \((.batching.cpu_us_per_req * 10 | round) / 10) µs CPU/req (\((.cpu_ratio * 100 | round) / 100)x)"' \
        "$work/result.$server_cores.$trees.$conns.json"
    done
    stop plain
    stop batching
  done
done

report=$(jq -s --arg depth "$DEPTH" --arg features "$FEATURES" --arg duration "$DURATION" --arg rounds "$ROUNDS" \
  '{model: {objective: "binary:logistic", depth: ($depth | tonumber), features: ($features | tonumber)},
    load: {duration: $duration, rounds: ($rounds | tonumber)}, runs: .}' "$work"/result.*.json)

echo
# The table runtime/README.md's batching section is made of (markdown).
jq -r '
  def f(x; n): (x * pow(10; n) | round) / pow(10; n) | tostring;
  "| server cores | trees | connections | req/s without | req/s with | req/s ratio | CPU µs/req without | with | CPU ratio | p50 / p99 ms without | with |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  (.runs | sort_by(.server_cores, .trees, .connections)[] |
    "| \(.server_cores) | \(.trees) | \(.connections) | \(f(.plain.rps; 0)) | \(f(.batching.rps; 0)) | **\(f(.rps_ratio; 2))x** | \(f(.plain.cpu_us_per_req; 1)) | \(f(.batching.cpu_us_per_req; 1)) | \(f(.cpu_ratio; 2))x | \(f(.plain.p50_us / 1000; 2)) / \(f(.plain.p99_us / 1000; 2)) | \(f(.batching.p50_us / 1000; 2)) / \(f(.batching.p99_us / 1000; 2)) |")
' <<<"$report"

if [ -n "${BATCHING_TEST_OUT:-}" ]; then
  jq . <<<"$report" >"$BATCHING_TEST_OUT"
  echo "figures written to $BATCHING_TEST_OUT"
fi
