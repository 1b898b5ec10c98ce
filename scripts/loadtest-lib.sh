# Shared by the load tests (scripts/load-test.sh, scripts/batching-test.sh), which source it after
# defining die MESSAGE.

# require_tools TOOL...: each is on PATH.
require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die "$tool not found (scripts/deps.sh installs the Debian packages)"
  done
}

# check_server_cores P...: each is a whole number of cores from 1 to this machine's.
check_server_cores() {
  local p ncpu
  ncpu=$(nproc)
  for p in "$@"; do
    [[ $p =~ ^[1-9][0-9]*$ ]] && [ "$p" -le "$ncpu" ] || die "SERVER_CORES: $p is not between 1 and the $ncpu cores of this machine"
  done
}

# check_durations NAME...: each named variable is a duration both wrk and grpcload read: a whole
# number of seconds, minutes or hours (wrk refuses 0s and fractions, which would otherwise end a
# load test at its first server without a word).
check_durations() {
  local d
  for d in "$@"; do
    [[ ${!d} =~ ^[1-9][0-9]*[smh]$ ]] || die "$d: ${!d} is not a whole, positive number of seconds, minutes or hours (say 5s)"
  done
}

# The run's folder ($work) and the servers it started ($pids, which callers add to): on exit the
# servers are stopped and the folder removed.
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

# free_port: a port nothing listens on now (the kernel's pick for a socket bound to port 0).
free_port() {
  "${python:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# cpu_ticks PID: the process's user + system CPU time so far, in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# siblings CPU: the logical CPUs sharing CPU's physical core (itself included), one per line, from
# the kernel's topology ("0,8" or "0-1") under cpu_sysfs; CPU alone where the kernel does not say.
cpu_sysfs=${LOADTEST_CPU_SYSFS:-/sys/devices/system/cpu}
siblings() {
  local list part
  list=$(cat "$cpu_sysfs/cpu$1/topology/thread_siblings_list" 2>/dev/null) || { echo "$1"; return; }
  for part in ${list//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}

# split_cores P: the core split for P server cores, in server_cpus, load_cpus and load_threads
# (the cores left; with none left, the last, shared) and split (in words). The server takes the
# first P cores, one per physical core where the machine has enough of them; a hyperthread
# sibling of a server core shares its execution units, so the load generator there would slow
# the server as a busy neighbour does: such siblings stay idle, unless nothing else is left.
split_cores() {
  local ncpu c s server=() free=() idle=()
  local -A taken=() server_core=()
  ncpu=$(nproc)
  # First one logical CPU per physical core, then, when P is more than the physical cores, siblings.
  for ((c = 0; c < ncpu && ${#server[@]} < $1; c++)); do
    [ -n "${server_core[$c]:-}" ] && continue
    server+=("$c")
    taken[$c]=1
    for s in $(siblings "$c"); do server_core[$s]=1; done
  done
  for ((c = 0; c < ncpu && ${#server[@]} < $1; c++)); do
    [ -n "${taken[$c]:-}" ] || { server+=("$c"); taken[$c]=1; }
  done
  server_cpus=$(printf '%s\n' "${server[@]}" | sort -n | paste -sd,)
  for ((c = 0; c < ncpu; c++)); do
    [ -n "${taken[$c]:-}" ] && continue
    if [ -n "${server_core[$c]:-}" ]; then idle+=("$c"); else free+=("$c"); fi
  done
  if [ "${#free[@]}" -gt 0 ]; then
    load_cpus=$(IFS=,; echo "${free[*]}")
    load_threads=${#free[@]}
    split="server on cores $server_cpus, load generator on cores $load_cpus"
    [ "${#idle[@]}" -eq 0 ] || split+=" (idle: $(IFS=,; echo "${idle[*]}"), the server cores' hyperthread siblings)"
  elif [ "${#idle[@]}" -gt 0 ]; then
    load_cpus=$(IFS=,; echo "${idle[*]}")
    load_threads=${#idle[@]}
    split="server on cores $server_cpus, load generator on cores $load_cpus (the server cores' hyperthread siblings: no other core is left)"
  else
    load_cpus=$((ncpu - 1))
    load_threads=1
    split="server on cores $server_cpus, load generator on core $load_cpus (shared: no core is left)"
  fi
}

# The servers of a run by name: their process ids and ports.
declare -A pid port

# start NAME CPUS READY-COMMAND COMMAND...: starts a server pinned to CPUS in the background and
# waits until READY-COMMAND (a shell string) succeeds; GOMAXPROCS is $server_cores.
start() {
  local name=$1 cpus=$2 ready=$3
  shift 3
  GOMAXPROCS=$server_cores taskset -c "$cpus" "$@" >"$work/$name.log" 2>&1 &
  pid[$name]=$!
  pids+=("${pid[$name]}")
  local i
  for i in $(seq 600); do
    eval "$ready" >/dev/null 2>&1 && return 0
    kill -0 "${pid[$name]}" 2>/dev/null || { cat "$work/$name.log" >&2; die "$name exited before it was ready"; }
    sleep 0.05
  done
  die "$name not ready within 30 s"
}

stop() {
  kill "${pid[$1]}" 2>/dev/null || true
  wait "${pid[$1]}" 2>/dev/null || true
}
