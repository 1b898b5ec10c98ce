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
# cpu_list FIRST LAST: "0" or "0-1".
cpu_list() { if [ "$1" = "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }

# split_cores P: the core split for P server cores, in server_cpus (cores 0..P-1), load_cpus and
# load_threads (the cores after them; with none left, the last, shared) and split (in words).
split_cores() {
  local ncpu
  ncpu=$(nproc)
  server_cpus=$(cpu_list 0 $(($1 - 1)))
  if [ "$1" -lt "$ncpu" ]; then
    load_cpus=$(cpu_list "$1" $((ncpu - 1)))
    load_threads=$((ncpu - $1))
    split="server on cores $server_cpus, load generator on cores $load_cpus"
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
