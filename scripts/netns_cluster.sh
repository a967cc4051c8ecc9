#!/usr/bin/env bash
# Multi-host on one machine: the frontend and each of two backends (two
# emulated GPUs each) in their own network namespace, joined by veth pairs,
# so frontend and backends talk across real interfaces, not loopback.
#
#   ns fe  --veth--  ns b0      fe 169.254.77.1/30 <-> b0 169.254.77.2/30
#          --veth--  ns b1      fe 169.254.77.5/30 <-> b1 169.254.77.6/30
#
# Link-local addresses (169.254/16), never a private range. Clients run inside
# the frontend's namespace and reach it on its own loopback.
#
# Usage: scripts/netns_cluster.sh [--check] [--serve]
#   --check  (the ctest `integration.netns`) serve inference calls and a short
#            load, check that every call is answered, that the bytes crossed
#            the veth interfaces, and that the frontend turns not-ready when a
#            backend's link goes down; then tear down. Exit 77 (skipped) with
#            the failing command and its error where namespaces cannot be
#            made (no root, no iproute2, no CAP_SYS_ADMIN).
#   --serve  keep serving until Ctrl-C; run clients with
#            `ip netns exec <fe ns> build/bin/tessera_client --server=127.0.0.1:8100`.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${TESSERA_BUILD_DIR:-$ROOT/build}/bin"
MODE=check
for arg in "$@"; do
  case "$arg" in
    --check) MODE=check ;;
    --serve) MODE=serve ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "netns_cluster.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

TAG="tsr$$"
FE="$TAG-fe"; B0="$TAG-b0"; B1="$TAG-b1"
LOG="$(mktemp -d /tmp/tessera-netns.XXXXXX)"
PIDS=()
say() { echo "[netns] $*"; }
skip() {
  echo "[netns] SKIPPED: $*" >&2
  exit 77
}
fail() {
  echo "[netns] FAIL: $*" >&2
  for f in "$LOG"/*.log; do
    echo "--- $(basename "$f") (last lines)" >&2
    tail -n 15 "$f" >&2
  done
  exit 1
}
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null; done
  wait 2> /dev/null
  for ns in "$FE" "$B0" "$B1"; do ip netns del "$ns" 2> /dev/null; done
  rm -rf "$LOG"
  exit $rc
}
trap cleanup EXIT INT TERM

[[ -x "$BIN/tessera_frontend" ]] || fail "no $BIN/tessera_frontend: run scripts/setup.sh"
command -v ip > /dev/null || skip "no 'ip' command (Debian package iproute2)"
if ! err=$(ip netns add "$FE" 2>&1); then
  skip "'ip netns add $FE' failed: $err"
fi
for ns in "$B0" "$B1"; do
  ip netns add "$ns" 2> "$LOG/err" || skip "'ip netns add $ns' failed: $(cat "$LOG/err")"
done
i=0
for ns in "$B0" "$B1"; do
  fe_if="$TAG-f$i"; be_if="$TAG-b$i"
  fe_ip="169.254.77.$((4 * i + 1))"; be_ip="169.254.77.$((4 * i + 2))"
  ip link add "$fe_if" type veth peer name "$be_if" 2> "$LOG/err" ||
    skip "'ip link add $fe_if type veth peer name $be_if' failed: $(cat "$LOG/err")"
  ip link set "$fe_if" netns "$FE" && ip link set "$be_if" netns "$ns" ||
    fail "moving the veth ends into the namespaces"
  ip -n "$FE" addr add "$fe_ip/30" dev "$fe_if" &&
    ip -n "$ns" addr add "$be_ip/30" dev "$be_if" &&
    ip -n "$FE" link set "$fe_if" up && ip -n "$ns" link set "$be_if" up ||
    fail "configuring $fe_if/$be_if"
  i=$((i + 1))
done
for ns in "$FE" "$B0" "$B1"; do ip -n "$ns" link set lo up; done
say "namespaces $FE, $B0, $B1 joined by veth ($TAG-f0/$TAG-b0, $TAG-f1/$TAG-b1)"

MODELS="$ROOT/configs/emulated/models"
cd "$ROOT" || fail "cd $ROOT"  # the config's profile paths are relative
# The backends listen beyond loopback: they accept only callers with the
# cluster's token.
TOKEN="$LOG/cluster_token"
(umask 077 && openssl rand -hex 32 > "$TOKEN") || fail "openssl rand"
i=0
for ns in "$B0" "$B1"; do
  ip netns exec "$ns" "$BIN/tessera_backend" --id="backend$i" \
    --listen="169.254.77.$((4 * i + 2)):8101" --emulated_gpus=2 --time_scale=10 \
    --model_repository="$MODELS" --profile_dir="$ROOT/profiles" \
    --cluster_token_file="$TOKEN" > "$LOG/backend$i.log" 2>&1 &
  PIDS+=($!)
  i=$((i + 1))
done
ip netns exec "$FE" "$BIN/tessera_frontend" \
  --config="$ROOT/configs/emulated_cluster.pbtxt" \
  --backends=backend0=169.254.77.2:8101,backend1=169.254.77.6:8101 \
  --listen=127.0.0.1:8100 --http_port=8110 --admin_listen=127.0.0.1:8120 \
  --cluster_token_file="$TOKEN" --model_repository="$MODELS" \
  > "$LOG/frontend.log" 2>&1 &
PIDS+=($!)

ready() {
  ip netns exec "$FE" "$BIN/tessera_client" --server=127.0.0.1:8100 2> /dev/null |
    grep -q "server ready: yes"
}
for _ in $(seq 1 60); do
  ready && break
  sleep 0.5
done
ready || fail "frontend not ready within 30 s"
say "frontend in $FE ready; backends at 169.254.77.2:8101 ($B0) and 169.254.77.6:8101 ($B1)"

if [[ "$MODE" == serve ]]; then
  say "serving; clients: ip netns exec $FE $BIN/tessera_client --server=127.0.0.1:8100 --model=resnet50 --shape_only"
  wait
  exit 0
fi

rx_before=()
for i in 0 1; do
  ns=$([[ $i == 0 ]] && echo "$B0" || echo "$B1")
  rx_before[$i]=$(ip netns exec "$ns" cat "/sys/class/net/$TAG-b$i/statistics/rx_bytes")
done
ip netns exec "$FE" "$BIN/tessera_loadgen" --server=127.0.0.1:8100 --shape_only \
  --load=lenet:40,resnet50:8,vgg16:4 --duration_s=6 --json="$LOG/load.json" \
  > "$LOG/loadgen.log" 2>&1 || fail "tessera_loadgen failed"
/usr/bin/python3 - "$LOG/load.json" << 'EOF' || fail "not every call was answered OK"
import json, sys
rows = json.load(open(sys.argv[1]))
sent = sum(r["sent"] for r in rows)
errors = sum(r["errors"] for r in rows)
print(f"[netns] {sent} calls across the namespaces, {errors} errors")
sys.exit(0 if sent > 50 and errors == 0 else 1)
EOF
# Batches went to whichever backend the plan put gpulets on; heartbeats and
# plans reach both.
most=0
for i in 0 1; do
  ns=$([[ $i == 0 ]] && echo "$B0" || echo "$B1")
  rx=$(ip netns exec "$ns" cat "/sys/class/net/$TAG-b$i/statistics/rx_bytes")
  got=$((rx - rx_before[i]))
  say "backend$i's veth received $got bytes during the load"
  ((got > 0)) || fail "backend$i saw no traffic on its veth"
  ((got > most)) && most=$got
done
((most > 10000)) || fail "no backend's veth carried the batches (most: $most bytes)"

# A backend's link goes down: the frontend misses its heartbeats and turns
# not-ready; the link comes back: ready again.
ip -n "$B1" link set "$TAG-b1" down
not_ready=0
for _ in $(seq 1 40); do
  code=$(ip netns exec "$FE" curl -s -o /dev/null -w '%{http_code}' \
    http://127.0.0.1:8110/v2/health/ready || true)
  if [[ "$code" != 200 ]]; then not_ready=1; break; fi
  sleep 0.5
done
((not_ready)) || fail "the frontend stayed ready with backend1's link down"
say "backend1's link down: frontend not ready (HTTP $code)"
ip -n "$B1" link set "$TAG-b1" up
for _ in $(seq 1 60); do
  code=$(ip netns exec "$FE" curl -s -o /dev/null -w '%{http_code}' \
    http://127.0.0.1:8110/v2/health/ready || true)
  [[ "$code" == 200 ]] && break
  sleep 0.5
done
[[ "$code" == 200 ]] || fail "the frontend did not become ready again (HTTP $code)"
say "link up again: frontend ready"
say "PASS"
