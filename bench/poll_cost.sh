#!/usr/bin/env bash
# What polling costs and buys at different request rates: starts the local
# cluster of configs/local_cpu.pbtxt (one frontend, one backend, two
# proxies) once per polling setting, sends open-loop lenet traffic at each
# rate with tessera_loadgen, and prints the latency and the CPU each
# process used per second of load (from /proc/<pid>/stat, 10 ms ticks).
#
# Usage: bench/poll_cost.sh [--rates="10 100 400 1500"] [--duration_s=10]
# A rate "cN" is a closed loop with N requests outstanding instead.
# Settings: "off" (--poll_us=0 --proxy_poll_us=0), "default" (the
# binaries' defaults: 2 ms windows, polls finding nothing at most 5 % of
# each second) and "unbounded" (--poll_idle_percent=100).
# Needs a build (scripts/setup.sh); TESSERA_BUILD_DIR as there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${TESSERA_BUILD_DIR:-$ROOT/build}/bin"
RATES="10 100 400 1500"
DURATION=10
for arg in "$@"; do
  case "$arg" in
    --rates=*) RATES="${arg#--rates=}" ;;
    --duration_s=*) DURATION="${arg#--duration_s=}" ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "poll_cost.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

WORK="$(mktemp -d /tmp/tessera_poll_cost.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# CPU ticks (user + system) of the given processes, summed.
ticks() {
  local sum=0 pid
  for pid in "$@"; do
    # Fields after the command name's closing parenthesis: utime is the
    # 12th, stime the 13th.
    local rest
    rest="$(sed 's/.*) //' "/proc/$pid/stat")"
    set -- $rest
    sum=$((sum + ${12} + ${13}))
  done
  echo "$sum"
}

wait_for_file() {
  for _ in $(seq 1 300); do
    [[ -s "$1" ]] && return 0
    sleep 0.1
  done
  echo "poll_cost.sh: $1 never appeared" >&2
  exit 1
}

HZ="$(getconf CLK_TCK)"
printf '%-10s %6s %8s %8s %8s %12s %12s %12s\n' setting rate ok/s \
  "p50 ms" "p99 ms" "fe cpu ms/s" "be cpu ms/s" "px cpu ms/s"
for setting in off default unbounded; do
  case "$setting" in
    off) FLAGS=(--poll_us=0) ; PROXY_FLAGS=(--proxy_poll_us=0) ;;
    default) FLAGS=() ; PROXY_FLAGS=() ;;
    unbounded) FLAGS=(--poll_idle_percent=100) ; PROXY_FLAGS=() ;;
  esac
  rm -f "$WORK"/*.port
  "$BIN/tessera_backend" --listen=127.0.0.1:0 --port_file="$WORK/be.port" \
    --model_repository="$ROOT/models" "${FLAGS[@]}" "${PROXY_FLAGS[@]}" \
    > "$WORK/backend_$setting.log" 2>&1 &
  BE=$!
  PIDS+=("$BE")
  wait_for_file "$WORK/be.port"
  sed "s/127.0.0.1:8101/127.0.0.1:$(cat "$WORK/be.port")/" \
    "$ROOT/configs/local_cpu.pbtxt" > "$WORK/frontend.pbtxt"
  (cd "$ROOT" && exec "$BIN/tessera_frontend" --config="$WORK/frontend.pbtxt" \
    --listen=127.0.0.1:0 --port_file="$WORK/fe.port" --http_port=-1 \
    --admin_listen= --model_repository="$ROOT/models" "${FLAGS[@]}") \
    > "$WORK/frontend_$setting.log" 2>&1 &
  FE=$!
  PIDS+=("$FE")
  wait_for_file "$WORK/fe.port"
  SERVER="127.0.0.1:$(cat "$WORK/fe.port")"
  for _ in $(seq 1 300); do
    "$BIN/tessera_client" --server="$SERVER" 2>/dev/null |
      grep -q "server ready: yes" && break
    sleep 0.5
  done
  mapfile -t PROXIES < <(pgrep -P "$BE")
  sleep 2  # the proxies' first waits and the start-up settle
  for rate in $RATES; do
    fe0=$(ticks "$FE"); be0=$(ticks "$BE"); px0=$(ticks "${PROXIES[@]}")
    if [[ "$rate" == c* ]]; then  # closed loop, ${rate#c} outstanding
      LOAD=(--load=lenet --concurrency="${rate#c}")
    else
      LOAD=(--load="lenet:$rate")
    fi
    "$BIN/tessera_loadgen" --server="$SERVER" "${LOAD[@]}" \
      --duration_s="$DURATION" --warmup_s=0 --csv="$WORK/load.csv" \
      > "$WORK/loadgen.log" 2>&1
    fe1=$(ticks "$FE"); be1=$(ticks "$BE"); px1=$(ticks "${PROXIES[@]}")
    IFS=, read -r _ _ ok p50 _ p99 _ < <(sed -n 2p "$WORK/load.csv")
    per_s() { echo "$(( ($2 - $1) * 1000 / HZ / DURATION ))"; }
    printf '%-10s %6s %8.0f %8.2f %8.2f %12s %12s %12s\n' "$setting" "$rate" \
      "$ok" "$p50" "$p99" "$(per_s "$fe0" "$fe1")" "$(per_s "$be0" "$be1")" \
      "$(per_s "$px0" "$px1")"
  done
  kill "$FE" "$BE"
  wait "$FE" "$BE" 2>/dev/null || true
  PIDS=()
done
echo "CPU per second of load: frontend, backend, and its proxies summed" \
  "(two proxies: lenet's and an idle one). Open-loop Poisson lenet" \
  "requests for ${DURATION} s at each rate (cN: a closed loop, N outstanding)."
