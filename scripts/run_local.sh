#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then starts a local Tessera cluster on this
# machine -- one frontend and one backend daemon on the `cpu` device, whose
# proxies serve every shipped model -- and makes a sample inference call
# for each model with the CLI client. Keeps serving until Ctrl-C, unless
# --demo-only is given (then it stops the cluster after the calls).
# --no-poll: the frontend's and backend's event loops and the proxies
# sleep at once instead of polling up to 2 ms first (--poll_us=0,
# --proxy_poll_us=0: for a machine whose cores are shared; see
# docs/benchmarks.md).
# Frontend: 127.0.0.1:${TESSERA_PORT:-8100}; logs in $TESSERA_LOG_DIR
# (default: build/logs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${TESSERA_BUILD_DIR:-$ROOT/build}"
LOG_DIR="${TESSERA_LOG_DIR:-$BUILD_DIR/logs}"
PORT="${TESSERA_PORT:-8100}"
BACKEND_PORT="${TESSERA_BACKEND_PORT:-8101}"
DEMO_ONLY=0
POLL_US=2000
for arg in "$@"; do
  case "$arg" in
    --demo-only) DEMO_ONLY=1 ;;
    --no-poll) POLL_US=0 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run_local.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

"$ROOT/scripts/setup.sh"
BIN="$BUILD_DIR/bin"
mkdir -p "$LOG_DIR"
CONFIG="$LOG_DIR/frontend.pbtxt"
sed "s/127.0.0.1:8101/127.0.0.1:$BACKEND_PORT/" \
  "$ROOT/configs/local_cpu.pbtxt" > "$CONFIG"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Tokens (readable by this user only): the backend accepts calls only from
# the frontend, the admin service only from tessera_admin --token_file.
for t in cluster_token admin_token; do
  [[ -s "$LOG_DIR/$t" ]] || (umask 077 && openssl rand -hex 32 > "$LOG_DIR/$t")
done

echo "==> starting backend on 127.0.0.1:$BACKEND_PORT (log: $LOG_DIR/backend.log)"
"$BIN/tessera_backend" --listen="127.0.0.1:$BACKEND_PORT" \
  --model_repository="$ROOT/models" --poll_us="$POLL_US" \
  --cluster_token_file="$LOG_DIR/cluster_token" \
  --proxy_poll_us="$POLL_US" > "$LOG_DIR/backend.log" 2>&1 &
PIDS+=($!)
echo "==> starting frontend on 127.0.0.1:$PORT (log: $LOG_DIR/frontend.log)"
(cd "$ROOT" && exec "$BIN/tessera_frontend" --config="$CONFIG" \
  --listen="127.0.0.1:$PORT" --model_repository="$ROOT/models" \
  --cluster_token_file="$LOG_DIR/cluster_token" \
  --admin_token_file="$LOG_DIR/admin_token" --poll_us="$POLL_US") \
  > "$LOG_DIR/frontend.log" 2>&1 &
PIDS+=($!)

echo "==> waiting for the cluster to load and warm up the models"
for _ in $(seq 1 180); do
  if "$BIN/tessera_client" --server="127.0.0.1:$PORT" 2>/dev/null \
      | grep -q "server ready: yes"; then
    break
  fi
  for pid in "${PIDS[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "a process exited; logs:" >&2
      tail -n 20 "$LOG_DIR"/*.log >&2
      exit 1
    fi
  done
  sleep 1
done

"$BIN/tessera_client" --server="127.0.0.1:$PORT"
for model in lenet resnet18 mobilenet_v3_small bert_tiny; do
  "$BIN/tessera_client" --server="127.0.0.1:$PORT" --model="$model" --batch=2
done

if ((DEMO_ONLY)); then
  echo "==> demo done; stopping the cluster"
  exit 0
fi
echo "==> admin: $BIN/tessera_admin --token_file=$LOG_DIR/admin_token status"
echo "==> serving on 127.0.0.1:$PORT; press Ctrl-C to stop"
wait
