#!/usr/bin/env bash
# Starts an emulated GPU cluster on this machine: a frontend and two backend
# daemons with two emulated GPUs each (4 GPUs), serving the emulated model
# set (configs/emulated/models, profiles/emulated) at time scale k = 10.
# Needs no GPU and no ../shared. Then, by default, drives it with the
# scenario runner (rates rise, fall, rise higher) and writes the table to
# $TESSERA_LOG_DIR/scenario-<policy>.csv and a plot next to it.
# Usage: scripts/run_emulated.sh [--policy=gpulet] [--serve] [--no-setup]
#          [--scenario-args="..."] [--loadgen-search] [--loadgen-report]
#          [--rules="PlanningRules text"] [--frontend="FrontendConfig text"]
#          [--tag=NAME]
#   --rules           planning rules added to the frontend config, e.g.
#                     --rules='tessera { objective: TESSERA_OBJECTIVE_FEWEST_GPUS }'
#   --frontend        fields replacing the frontend config's, e.g.
#                     --frontend='replan_period_s: 2 rise_window_s: 2'
#   --tag             name the outputs <policy>-<tag> instead of <policy>
#   --serve           keep serving (Ctrl-C to stop) instead of the scenario
#   --loadgen-search  measure the SLO-preserved max throughput instead
#   --loadgen-report  one 45 s load generator run at 5x the base mix,
#                     report in $TESSERA_LOG_DIR/loadgen-<policy>.json
# Ports: frontend ${TESSERA_PORT:-8100}, backends +1 and +2; HTTP metrics
# and health: frontend +10, backends +11 and +12; admin service +20.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${TESSERA_BUILD_DIR:-$ROOT/build}"
LOG_DIR="${TESSERA_LOG_DIR:-$BUILD_DIR/logs}"
PORT="${TESSERA_PORT:-8100}"
POLICY=gpulet
MODE=scenario
SETUP=1
SCENARIO_ARGS=""
RULES=""
FRONTEND=""
TAG=""
for arg in "$@"; do
  case "$arg" in
    --policy=*) POLICY="${arg#*=}" ;;
    --serve) MODE=serve ;;
    --loadgen-search) MODE=search ;;
    --loadgen-report) MODE=report ;;
    --no-setup) SETUP=0 ;;
    --scenario-args=*) SCENARIO_ARGS="${arg#*=}" ;;
    --rules=*) RULES="${arg#*=}" ;;
    --frontend=*) FRONTEND="${arg#*=}" ;;
    --tag=*) TAG="${arg#*=}" ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run_emulated.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

((SETUP)) && "$ROOT/scripts/setup.sh" --no-models
BIN="$BUILD_DIR/bin"
MODELS="$ROOT/configs/emulated/models"
mkdir -p "$LOG_DIR"
B0=$((PORT + 1)); B1=$((PORT + 2))
CONFIG="$LOG_DIR/emulated-frontend.pbtxt"
sed -e "s/127.0.0.1:8101/127.0.0.1:$B0/" -e "s/127.0.0.1:8102/127.0.0.1:$B1/" \
  -e "s|\"profiles|\"$ROOT/profiles|g" \
  "$ROOT/configs/emulated_cluster.pbtxt" > "$CONFIG"
[[ -n "$RULES" ]] && echo "rules { $RULES }" >> "$CONFIG"
if [[ -n "$FRONTEND" ]]; then
  # A field given here replaces the file's line for it.
  for field in $(grep -oE '[a-z_]+:' <<< "$FRONTEND" | tr -d :); do
    sed -i "/^$field:/d" "$CONFIG"
  done
  echo "$FRONTEND" >> "$CONFIG"
fi
NAME="$POLICY${TAG:+-$TAG}"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Tokens (readable by this user only): the backends accept calls only from
# the frontend, the admin service only from tessera_admin --token_file.
for t in cluster_token admin_token; do
  [[ -s "$LOG_DIR/$t" ]] || (umask 077 && openssl rand -hex 32 > "$LOG_DIR/$t")
done

for i in 0 1; do
  port=$((PORT + 1 + i))
  echo "==> backend$i: 2 emulated GPUs on 127.0.0.1:$port (log: $LOG_DIR/emulated-backend$i.log)"
  "$BIN/tessera_backend" --listen="127.0.0.1:$port" --id="backend$i" \
    --emulated_gpus=2 --time_scale=10 --model_repository="$MODELS" \
    --http_port="$((PORT + 11 + i))" --cluster_token_file="$LOG_DIR/cluster_token" \
    --profile_dir="$ROOT/profiles" > "$LOG_DIR/emulated-backend$i.log" 2>&1 &
  PIDS+=($!)
done
echo "==> frontend ($POLICY) on 127.0.0.1:$PORT (log: $LOG_DIR/emulated-frontend.log)"
"$BIN/tessera_frontend" --config="$CONFIG" --policy="$POLICY" \
  --listen="127.0.0.1:$PORT" --model_repository="$MODELS" \
  --http_port="$((PORT + 10))" --admin_listen="127.0.0.1:$((PORT + 20))" \
  --cluster_token_file="$LOG_DIR/cluster_token" \
  --admin_token_file="$LOG_DIR/admin_token" \
  > "$LOG_DIR/emulated-frontend.log" 2>&1 &
PIDS+=($!)

for _ in $(seq 1 60); do
  if "$BIN/tessera_client" --server="127.0.0.1:$PORT" 2>/dev/null \
      | grep -q "server ready: yes"; then
    break
  fi
  sleep 1
done
"$BIN/tessera_client" --server="127.0.0.1:$PORT" --model=resnet50 --shape_only

case "$MODE" in
  serve)
    echo "==> serving on 127.0.0.1:$PORT; press Ctrl-C to stop"
    wait ;;
  report)
    # One load generator run at 5x the base mix; report as JSON for
    # scripts/plot_loadgen.py.
    "$BIN/tessera_loadgen" --server="127.0.0.1:$PORT" --shape_only \
      --load=lenet:150,googlenet:25,resnet50:37.5,vgg16:15,ssd_mobilenet:15 \
      --slos=lenet:50,googlenet:660,resnet50:1080,vgg16:1420,ssd_mobilenet:1360 \
      --duration_s=45 --warmup_s=15 --json="$LOG_DIR/loadgen-$NAME.json" ;;
  search)
    "$BIN/tessera_loadgen" --server="127.0.0.1:$PORT" --shape_only --search \
      --load=lenet:30,googlenet:5,resnet50:7.5,vgg16:3,ssd_mobilenet:3 \
      --slos=lenet:50,googlenet:660,resnet50:1080,vgg16:1420,ssd_mobilenet:1360 \
      --duration_s=30 --warmup_s=12 --search_steps=10 ;;
  scenario)
    CSV="$LOG_DIR/scenario-$NAME.csv"
    # shellcheck disable=SC2086
    "$BIN/tessera_scenario" --frontend="127.0.0.1:$PORT" \
      --backends="127.0.0.1:$B0,127.0.0.1:$B1" \
      --cluster_token_file="$LOG_DIR/cluster_token" \
      --model_repository="$MODELS" --time_scale=10 --csv="$CSV" $SCENARIO_ARGS
    /usr/bin/python3 "$ROOT/scripts/plot_scenario.py" "$CSV" \
      --title="policy $NAME, 4 emulated GPUs, k = 10" || true ;;
esac
