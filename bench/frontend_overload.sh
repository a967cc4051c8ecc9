#!/usr/bin/env bash
# Frontend-bound overload: the local cluster of configs/local_cpu.pbtxt
# (one frontend, one backend, two CPU proxies; event loops and proxies do
# not poll), lenet only, open-loop Poisson traffic from tessera_loadgen
# pinned to core 1 (5 s client deadline, lenet's 50 ms SLO). The frontend
# is capped at --frontend_cpu_percent of a core (a cgroup-v1 CPU quota over
# 10 ms periods), so that one load generator on this 2-core machine can
# offer it several times its capacity. With --server_cpus=0 instead (and
# --frontend_cpu_percent=0), the frontend, the backend and its proxies share
# core 0 uncapped: the whole CPU cluster is the bottleneck, and the load
# generator has core 1 to itself.
#
# With --loadgen_flags="--client_throttle_k=2", the load generator throttles
# itself as a well-behaved client does (client-side adaptive throttling):
# the requests it refuses without sending count as offered (sent/s) and
# show as "throttled" among the codes.
#
# Prints per rate: offered and answered rate, goodput (OK within the SLO per
# second), its share of the capacity, the frontend's resident size, the
# requests never answered before the client's deadline (lost), and the
# codes; then the resident size a minute after the last run. Capacity: the
# best goodput at the rates up to --capacity_rates (the same run).
#
# Usage: bench/frontend_overload.sh [--frontend_cpu_percent=30 (0: no cap)]
#   [--capacity_rates="5000 5500 6000"] [--overload="1.2 1.5"]
#   [--frontend_flags="--max_backlog_slo_fraction=0"] [--duration_s=8]
#   [--settle_s=60] [--loadgen_flags="--streams=4 --client_throttle_k=2"]
#   [--server_cpus=0]
# With TESSERA_OVERLOAD_METRICS=FILE, the frontend's /metrics after the
# overload runs are written to FILE (server-side codes).
# Needs root for the cgroup (else the frontend is not capped and the load
# generator's ~12k/s from one core is all it can offer); a build
# (scripts/setup.sh); TESSERA_BUILD_DIR as there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${TESSERA_BUILD_DIR:-$ROOT/build}/bin"
CPU_PERCENT=30
CAPACITY_RATES="5000 5500 6000"
OVERLOAD="1.2 1.5"
FRONTEND_FLAGS=""
LOADGEN_FLAGS=""
DURATION=8
SETTLE_S=60
SERVER_CPUS=""
for arg in "$@"; do
  case "$arg" in
    --frontend_cpu_percent=*) CPU_PERCENT="${arg#*=}" ;;
    --capacity_rates=*) CAPACITY_RATES="${arg#*=}" ;;
    --overload=*) OVERLOAD="${arg#*=}" ;;
    --frontend_flags=*) FRONTEND_FLAGS="${arg#*=}" ;;
    --loadgen_flags=*) LOADGEN_FLAGS="${arg#*=}" ;;
    --duration_s=*) DURATION="${arg#*=}" ;;
    --settle_s=*) SETTLE_S="${arg#*=}" ;;
    --server_cpus=*) SERVER_CPUS="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | cut -c3-; exit 0 ;;
    *) echo "frontend_overload.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

WORK="$(mktemp -d /tmp/tessera_frontend_overload.XXXXXX)"
CGROUP=/sys/fs/cgroup/cpu/tessera_frontend_overload_$$
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -d "$CGROUP" ]] && rmdir "$CGROUP" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

wait_for_file() {
  for _ in $(seq 1 300); do
    [[ -s "$1" ]] && return 0
    sleep 0.1
  done
  echo "frontend_overload.sh: $1 never appeared" >&2
  exit 1
}
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

"$BIN/tessera_backend" --listen=127.0.0.1:0 --port_file="$WORK/be.port" \
  --model_repository="$ROOT/models" --poll_us=0 --proxy_poll_us=0 \
  > "$WORK/backend.log" 2>&1 &
BACKEND=$!
PIDS+=("$BACKEND")
wait_for_file "$WORK/be.port"
sed "s/127.0.0.1:8101/127.0.0.1:$(cat "$WORK/be.port")/" \
  "$ROOT/configs/local_cpu.pbtxt" > "$WORK/frontend.pbtxt"
# shellcheck disable=SC2086  # FRONTEND_FLAGS is a list of flags
(cd "$ROOT" && exec "$BIN/tessera_frontend" --config="$WORK/frontend.pbtxt" \
  --listen=127.0.0.1:0 --port_file="$WORK/fe.port" \
  --http_port=0 --http_port_file="$WORK/fe_http.port" \
  --admin_listen= --model_repository="$ROOT/models" --poll_us=0 \
  $FRONTEND_FLAGS) > "$WORK/frontend.log" 2>&1 &
FE=$!
PIDS+=("$FE")
wait_for_file "$WORK/fe.port"
SERVER="127.0.0.1:$(cat "$WORK/fe.port")"
READY=no
for _ in $(seq 1 120); do
  if "$BIN/tessera_client" --server="$SERVER" 2>/dev/null |
    grep -q "server ready: yes"; then
    READY=yes
    break
  fi
  sleep 0.5
done
if [[ "$READY" != yes ]]; then
  echo "frontend_overload.sh: the frontend is not ready after 60 s; its log:" >&2
  tail -5 "$WORK/frontend.log" >&2
  exit 1
fi
if [[ -n "$SERVER_CPUS" ]]; then
  # Pinned once the plan runs: the backend sizes gpulets by the cores it
  # may use at start, and the proxies start with the plan.
  for _ in $(seq 1 300); do
    (($(pgrep -c -P "$BACKEND" tessera_proxy || true) >= 2)) && break
    sleep 0.1
  done
  for pid in "$FE" "$BACKEND" $(pgrep -P "$BACKEND" tessera_proxy); do
    taskset -a -p -c "$SERVER_CPUS" "$pid" > /dev/null
  done
fi
CAPPED="not capped"
if [[ "$CPU_PERCENT" == 0 ]]; then
  :
elif mkdir "$CGROUP" 2>/dev/null; then
  echo 10000 > "$CGROUP/cpu.cfs_period_us"
  echo $((CPU_PERCENT * 100)) > "$CGROUP/cpu.cfs_quota_us"
  for task in /proc/"$FE"/task/*; do echo "${task##*/}" > "$CGROUP/tasks"; done
  CAPPED="capped at ${CPU_PERCENT} % of a core"
else
  echo "frontend_overload.sh: no cgroup (not root?): the frontend is not" \
    "capped" >&2
fi
sleep 2
IDLE_RSS=$(rss_mb "$FE")
echo "frontend ${CAPPED}${SERVER_CPUS:+; servers on CPU $SERVER_CPUS}; flags: ${FRONTEND_FLAGS:-(defaults)};" \
  "load generator: ${LOADGEN_FLAGS:-(unary calls)}; idle RSS" \
  "${IDLE_RSS} MB"
printf '%8s %9s %9s %9s %7s %7s %6s  %s\n' rate "sent/s" "goodput" "of cap." \
  "p50 ms" "RSS MB" lost codes

# One run at `rate`: prints its line and sets GOODPUT.
run() {
  local rate="$1" capacity="$2"
  # shellcheck disable=SC2086  # LOADGEN_FLAGS is a list of flags
  taskset -c 1 "$BIN/tessera_loadgen" --server="$SERVER" \
    --load="lenet:$rate" --duration_s="$DURATION" --timeout_s=5 \
    --slos=lenet:50 --shape_only --csv="$WORK/load.csv" $LOADGEN_FLAGS \
    > "$WORK/loadgen.log" 2>&1 || true
  local model offered ok p50 p90 p99 max slo attainment sent errors
  IFS=, read -r model offered ok p50 p90 p99 max slo attainment sent errors \
    < <(sed -n 2p "$WORK/load.csv")
  GOODPUT=$(awk -v a="$attainment" -v s="$sent" -v d="$DURATION" \
    'BEGIN {printf "%.0f", a * s / d}')
  local share="-"
  if [[ "$capacity" != 0 ]]; then
    share=$(awk -v g="$GOODPUT" -v c="$capacity" \
      'BEGIN {printf "%.0f %%", 100 * g / c}')
  fi
  local codes
  codes=$(awk '$1 == "lenet" {for (i = 9; i <= NF; ++i) printf "%s ", $i}' \
    "$WORK/loadgen.log")
  # Requests the server never answered before the client's deadline.
  local lost
  lost=$(awk '/got no answer/ {print $1}' "$WORK/loadgen.log")
  printf '%8s %9.0f %9s %9s %7.1f %7s %6s  %s\n' "$rate" \
    "$(awk -v s="$sent" -v d="$DURATION" 'BEGIN {print s / d}')" \
    "$GOODPUT" "$share" "$p50" "$(rss_mb "$FE")" "${lost:-0}" "${codes:-?}"
}

CAPACITY=0
for rate in $CAPACITY_RATES; do
  run "$rate" 0
  ((GOODPUT > CAPACITY)) && CAPACITY=$GOODPUT
done
echo "capacity: ${CAPACITY}/s (best goodput above)"
for factor in $OVERLOAD; do
  run "$(awk -v c="$CAPACITY" -v f="$factor" 'BEGIN {printf "%.0f", c * f}')" \
    "$CAPACITY"
done
if [[ -n "${TESSERA_OVERLOAD_METRICS:-}" ]]; then
  curl -s "http://127.0.0.1:$(cat "$WORK/fe_http.port")/metrics" \
    > "$TESSERA_OVERLOAD_METRICS"
fi
sleep "$SETTLE_S"
echo "RSS ${SETTLE_S} s after the last run: $(rss_mb "$FE") MB (idle" \
  "${IDLE_RSS} MB)"
