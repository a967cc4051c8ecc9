#!/usr/bin/env bash
# Effect of a Triton dynamic_batching queue delay (a model's
# max_queue_delay_ms) on serving: mobilenet_v3_small alone on one CPU
# gpulet (half of cpu0, batches of up to 16, SLO 200 ms), open-loop Poisson
# traffic from tessera_loadgen for --duration_s, once per delay (none: the
# model config without dynamic_batching, so Tessera's deadline rule alone
# decides when a batch leaves) and rate. Prints offered and answered rate,
# latency percentiles and errors per run.
#
# Usage: bench/queue_delay.sh [--delays_us="none 2000 20000"]
#   [--rates="60 120"] [--duration_s=20]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${TESSERA_BUILD_DIR:-$ROOT/build}/bin"
DELAYS="none 2000 20000" RATES="60 120" DURATION=20
for arg in "$@"; do
  case "$arg" in
    --delays_us=*) DELAYS="${arg#*=}" ;;
    --rates=*) RATES="${arg#*=}" ;;
    --duration_s=*) DURATION="${arg#*=}" ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "queue_delay.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

wait_file() {  # FILE PID
  for _ in $(seq 300); do
    [[ -s "$1" ]] && return 0
    kill -0 "$2" 2>/dev/null || { echo "a process exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2; exit 1
}

run() {  # DELAY RATE
  local d="$1" rate="$2" w="$WORK/$1_$2"
  local m="$w/models/mobilenet_v3_small" config
  config="$ROOT/models/mobilenet_v3_small/config.pbtxt"
  mkdir -p "$m"
  ln -s "$ROOT/models/mobilenet_v3_small/1" "$m/1"
  grep -v dynamic_batching "$config" > "$m/config.pbtxt"
  if [[ "$d" != none ]]; then
    echo "dynamic_batching { max_queue_delay_microseconds: $d }" \
      >> "$m/config.pbtxt"
  fi
  (umask 077 && openssl rand -hex 32 > "$w/token")
  "$BIN/tessera_backend" --listen=127.0.0.1:0 --port_file="$w/bport" \
    --model_repository="$w/models" --cluster_token_file="$w/token" \
    > "$w/backend.log" 2>&1 &
  local backend=$!
  PIDS+=("$backend")
  wait_file "$w/bport" "$backend"
  cat > "$w/frontend.pbtxt" <<EOT
backends { id: "backend0" address: "127.0.0.1:$(cat "$w/bport")" }
policy: "static"
profile_dir: "$ROOT/profiles"
static_plan { devices { backend_id: "backend0" device_id: "cpu0"
  gpulets { gpulet_id: "g" share_percent: 50
    models { model: "mobilenet_v3_small" batch_size: 16 } } } }
EOT
  "$BIN/tessera_frontend" --config="$w/frontend.pbtxt" \
    --listen=127.0.0.1:0 --port_file="$w/fport" --http_port=-1 \
    --model_repository="$w/models" --cluster_token_file="$w/token" \
    > "$w/frontend.log" 2>&1 &
  local frontend=$!
  PIDS+=("$frontend")
  wait_file "$w/fport" "$frontend"
  local server="127.0.0.1:$(cat "$w/fport")"
  for _ in $(seq 300); do
    "$BIN/tessera_client" --server="$server" 2>/dev/null |
      grep -q "server ready: yes" && break
    sleep 0.2
  done
  local line
  line=$("$BIN/tessera_loadgen" --server="$server" \
    --load="mobilenet_v3_small:$rate" --duration_s="$DURATION" --warmup_s=3 \
    --shape_only 2>/dev/null | grep "^mobilenet_v3_small")
  printf '%-10s %s\n' "$d" "$line"
  kill "$frontend" "$backend"
  wait "$frontend" "$backend" 2>/dev/null || true
}

printf '%-10s %s\n' "delay_us" "model                offered/s      ok/s   p50 ms   p90 ms   p99 ms   max ms    SLO met  errors"
for rate in $RATES; do
  for d in $DELAYS; do run "$d" "$rate"; done
done
