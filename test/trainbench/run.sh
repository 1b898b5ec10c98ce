#!/usr/bin/env bash
# Measures gangboost-train against its floor, a C program on libxgboost 3.0's C API alone
# (floor.c), on the same HIGGS-like data (gen/), and optionally against another trainer (e.g.
# one built from an older checkout on Debian 12's libxgboost 1.7.4), side by side in one run:
# wall time, the trainer's own boosting seconds, peak RSS. Run from the checkout after make build:
#   test/trainbench/run.sh [ROWS (1000000)] [ROUNDS (100)] [OTHER_TRAINER]
set -euo pipefail
cd "$(dirname "$0")/../.."
rows=${1:-1000000} rounds=${2:-100} other=${3:-}
work=${TRAINBENCH_DIR:-$(mktemp -d)}
eval "$(scripts/xgboost-flags.sh env)"
[[ -f $work/data.csv ]] || go run ./test/trainbench/gen "$rows" "$work/data.csv" "$work/data.f32"
gcc -O2 $CGO_CFLAGS -o "$work/floor" test/trainbench/floor.c $CGO_LDFLAGS -lxgboost
measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>&1 || { cat "$work/out"; return 1; }
  read -r wall rss <"$work/time"
  local boost
  boost=$(grep -o 'boosting_s=[0-9.]*\|msg="boosting done".*seconds=[0-9.]*' "$work/out" | grep -o '[0-9.]*$' | tail -n1)
  printf '%-28s wall %6.1f s  boosting %6.1f s  peak RSS %5d MiB\n' "$name" "$wall" "$boost" $((rss / 1024))
}
for nthread in 1 2; do
  args=(--train "$work/data.csv" --label y --objective binary:logistic --num-round "$rounds" --max-depth 6 --eta 0.3
    --nthread "$nthread" --log-every "$rounds")
  rm -rf "$work/m"; measure "gangboost-train nthread=$nthread" bin/gangboost-train "${args[@]}" --model-dir "$work/m"
  measure "floor.c nthread=$nthread" "$work/floor" "$work/data.f32" "$rows" 28 "$nthread" "$rounds"
  if [[ -n $other ]]; then
    rm -rf "$work/m"; measure "$(basename "$other") nthread=$nthread" "$other" "${args[@]}" --model-dir "$work/m"
  fi
done
