# Shared by the load tests (scripts/load-test.sh, scripts/batching-test.sh), which source it after
# defining die MESSAGE.

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
