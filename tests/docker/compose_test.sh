#!/usr/bin/env bash
# The compose deployment, for real (ctest label `docker`): starts its own
# dockerd (--bridge=none --iptables=false, own data root and socket), makes
# debian:bookworm-slim with debootstrap when absent, builds the Tessera
# image with scripts/setup.sh (PREBUILT=1: build/bin of the host build) and
# Prometheus from Debian's package, brings up docker/docker-compose.yml
# (frontend, two backends with emulated GPUs, Prometheus) with every service
# on the host network over loopback, waits for readiness, sends inference
# requests through the frontend container, checks the counters moved and
# that Prometheus scraped every target over HTTPS, that every link is TLS
# (a plaintext client is refused) and the admin service needs its token,
# validates the full compose file
# (Grafana included) and the dashboard JSON, and tears everything down,
# also on failure.
#
# A step that cannot run prints the command that failed and its error and
# exits non-zero: in CI a skip is a failure.
#
# Environment: TESSERA_BUILD_DIR (default build/), TESSERA_DOCKER_ROOT
# (dockerd data root, kept between runs to reuse images; default
# /var/tmp/tessera-docker), TESSERA_DEBIAN_MIRROR.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${TESSERA_BUILD_DIR:-$ROOT/build}"
DATA_ROOT="${TESSERA_DOCKER_ROOT:-/var/tmp/tessera-docker}"
MIRROR="${TESSERA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
WORK="$(mktemp -d /tmp/tessera-compose.XXXXXX)"
DOCKER=/usr/bin/docker
COMPOSE=/usr/bin/docker-compose
PROJECT="tessera-test-$$"
export DOCKER_HOST="unix://$WORK/docker.sock"
START=$(date +%s)

say() { echo "[compose_test +$(($(date +%s) - START))s] $*"; }
fail() {
  echo "[compose_test] FAIL: $*" >&2
  exit 1
}
# Runs a command; on failure prints it and its output, then fails.
run() {
  local log="$WORK/last.log"
  if ! "$@" > "$log" 2>&1; then
    echo "[compose_test] command failed: $*" >&2
    tail -n 40 "$log" >&2
    fail "step failed"
  fi
}

DOCKERD_PID=""
COMPOSE_ARGS=()
cleanup() {
  local rc=$?
  if ((${#COMPOSE_ARGS[@]})); then
    if ((rc != 0)); then
      say "logs of the failed run:"
      "$COMPOSE" "${COMPOSE_ARGS[@]}" logs --tail=30 2>&1 | tail -n 120
    fi
    say "tearing down"
    "$COMPOSE" "${COMPOSE_ARGS[@]}" down -v --remove-orphans > /dev/null 2>&1
  fi
  if [[ -n "$DOCKERD_PID" ]]; then
    kill "$DOCKERD_PID" 2> /dev/null
    for _ in $(seq 1 20); do
      kill -0 "$DOCKERD_PID" 2> /dev/null || break
      sleep 0.5
    done
    kill -9 "$DOCKERD_PID" 2> /dev/null
  fi
  # dockerd leaves its network namespace mounted under the exec root.
  umount "$WORK/exec/netns/default" 2> /dev/null
  rm -rf "$WORK" 2> /dev/null
  exit $rc
}
trap cleanup EXIT INT TERM

# --- 1. Disk, packages, binaries -------------------------------------------
avail_gb=$(df -Pk "$(dirname "$DATA_ROOT")" | awk 'NR == 2 { print int($4 / 1048576) }')
say "free disk under $(dirname "$DATA_ROOT"): ${avail_gb} GiB"
((avail_gb >= 12)) || fail "need 12 GiB free for the images, have ${avail_gb} GiB (df -Pk $(dirname "$DATA_ROOT"))"
[[ -x "$BUILD_DIR/bin/tessera_frontend" ]] ||
  fail "no $BUILD_DIR/bin/tessera_frontend: run scripts/setup.sh first"
[[ "$(cd "$BUILD_DIR" && pwd)" == "$ROOT/build" ]] ||
  fail "the image takes build/bin from the repository: TESSERA_BUILD_DIR must be $ROOT/build"
missing=()
for p in docker.io docker-compose debootstrap curl; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  run $SUDO apt-get update -q
  run env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
fi
[[ $(id -u) -eq 0 ]] || fail "dockerd needs root (id -u = $(id -u))"

# --- 2. dockerd --------------------------------------------------------------
mkdir -p "$DATA_ROOT" "$WORK/exec"
say "starting dockerd (data root $DATA_ROOT)"
dockerd --bridge=none --iptables=false --ip-masq=false \
  --data-root="$DATA_ROOT" --exec-root="$WORK/exec" \
  --host="$DOCKER_HOST" --pidfile="$WORK/docker.pid" \
  > "$WORK/dockerd.log" 2>&1 &
DOCKERD_PID=$!
for _ in $(seq 1 60); do
  "$DOCKER" info > /dev/null 2>&1 && break
  kill -0 "$DOCKERD_PID" 2> /dev/null || break
  sleep 1
done
if ! "$DOCKER" info > /dev/null 2>&1; then
  echo "[compose_test] dockerd did not come up; its log:" >&2
  tail -n 30 "$WORK/dockerd.log" >&2
  fail "dockerd --bridge=none --iptables=false --data-root=$DATA_ROOT"
fi

# --- 3. Base image -----------------------------------------------------------
if ! "$DOCKER" image inspect debian:bookworm-slim > /dev/null 2>&1; then
  say "no debian:bookworm-slim: debootstrap --variant=minbase bookworm ($MIRROR)"
  run debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR"
  say "docker import"
  tar -C "$WORK/rootfs" -c . | "$DOCKER" import - debian:bookworm-slim \
    > "$WORK/import.log" 2>&1 || { cat "$WORK/import.log" >&2; fail "docker import"; }
  rm -rf "$WORK/rootfs"
fi

# --- 4. Images ---------------------------------------------------------------
say "building tessera:latest (scripts/setup.sh --no-build inside, build/bin from the host)"
run "$DOCKER" build --network host --build-arg PREBUILT=1 \
  -f "$ROOT/docker/Dockerfile" -t tessera:latest "$ROOT"
say "building tessera-prometheus:latest (Debian's prometheus)"
run "$DOCKER" build --network host -t tessera-prometheus:latest \
  "$ROOT/docker/prometheus"

# --- 5. Compose on the host network over loopback ------------------------------
read -r FE FE_HTTP ADMIN B0 B1 B0_HTTP B1_HTTP PROM < <(/usr/bin/python3 - << 'EOF'
import socket
socks = []
for _ in range(8):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)
cat > "$WORK/prometheus.yml" << EOF
global:
  scrape_interval: 2s
scrape_configs:
  - job_name: tessera-frontend
    scheme: https
    tls_config:
      ca_file: /etc/tessera/secrets/ca.pem
    static_configs:
      - targets: ["127.0.0.1:$FE_HTTP"]
  - job_name: tessera-backend
    scheme: https
    tls_config:
      ca_file: /etc/tessera/secrets/ca.pem
    static_configs:
      - targets: ["127.0.0.1:$B0_HTTP", "127.0.0.1:$B1_HTTP"]
EOF
# The test's variant of the compose file: every service on the host network
# (containers talk over loopback, never over a bridge), so published ports
# (incompatible with host networking) are dropped. Everything else is the
# shipped file's.
/usr/bin/python3 - "$ROOT/docker/docker-compose.yml" "$WORK/compose.yml" << 'EOF' ||
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for svc in doc["services"].values():
    svc.pop("ports", None)
    svc["network_mode"] = "host"
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
EOF
  fail "could not derive the host-network compose file (/usr/bin/python3 yaml)"
export TESSERA_BIND=127.0.0.1 TESSERA_POLICY=gpulet
export TESSERA_FRONTEND_PORT=$FE TESSERA_FRONTEND_HTTP_PORT=$FE_HTTP
export TESSERA_ADMIN_PORT=$ADMIN TESSERA_PROMETHEUS_PORT=$PROM
export TESSERA_BACKEND0_PORT=$B0 TESSERA_BACKEND1_PORT=$B1
export TESSERA_BACKEND0_HTTP_PORT=$B0_HTTP TESSERA_BACKEND1_HTTP_PORT=$B1_HTTP
export TESSERA_BACKEND0_HOST=127.0.0.1 TESSERA_BACKEND1_HOST=127.0.0.1
export TESSERA_PROMETHEUS_CONFIG="$WORK/prometheus.yml"
# Certificates and tokens: made by the compose file's `secrets` service.
SECRETS="$WORK/secrets"
export TESSERA_SECRETS_DIR="$SECRETS"

say "validating the full compose file (Grafana included) and the dashboard"
run "$COMPOSE" -f "$ROOT/docker/docker-compose.yml" config -q
/usr/bin/python3 - "$ROOT/docker/grafana/dashboards/tessera.json" << 'EOF' || fail "dashboard JSON check"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"], "no panels"
for p in d["panels"]:
    assert p.get("targets"), f"panel {p.get('title')} has no query"
    for t in p["targets"]:
        assert "tessera_" in t["expr"], t
print(f"dashboard: {len(d['panels'])} panels")
EOF

COMPOSE_ARGS=(-p "$PROJECT" --project-directory "$ROOT/docker" -f "$WORK/compose.yml")
say "docker-compose up (frontend, backend0, backend1, prometheus) on ports $FE (gRPC), $FE_HTTP (HTTP), $PROM (Prometheus)"
run "$COMPOSE" "${COMPOSE_ARGS[@]}" up -d --no-build secrets frontend backend0 backend1 prometheus

ready=0
for _ in $(seq 1 90); do
  if curl -fsS --cacert "$SECRETS/ca.pem" \
      "https://127.0.0.1:$FE_HTTP/v2/health/ready" > /dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 1
done
((ready)) || fail "frontend not ready within 90 s (curl --cacert $SECRETS/ca.pem https://127.0.0.1:$FE_HTTP/v2/health/ready)"
say "frontend ready (HTTPS, verified against the cluster's CA)"
curl -fsS "http://127.0.0.1:$FE_HTTP/v2/health/ready" > /dev/null 2>&1 &&
  fail "the frontend's HTTP port answered plaintext HTTP"

# --- 6. Inference through the frontend container -------------------------------
FRONTEND_CONTAINER=$("$COMPOSE" "${COMPOSE_ARGS[@]}" ps -q frontend)
N=20
for model in lenet resnet50; do
  for i in $(seq 1 $N); do
    run "$DOCKER" exec "$FRONTEND_CONTAINER" tessera_client \
      --server="127.0.0.1:$FE" --tls_ca_file=/etc/tessera/secrets/ca.pem \
      --model=$model --shape_only
  done
done
say "$((2 * N)) inference calls answered over TLS through the frontend container"
"$DOCKER" exec "$FRONTEND_CONTAINER" tessera_client --server="127.0.0.1:$FE" \
  --timeout_ms=3000 > /dev/null 2>&1 &&
  fail "a plaintext client was answered on the TLS port $FE"
say "a plaintext client is refused"
admin=("$DOCKER" exec "$FRONTEND_CONTAINER" tessera_admin
  --server="127.0.0.1:$ADMIN" --tls_ca_file=/etc/tessera/secrets/ca.pem)
"${admin[@]}" status > /dev/null 2>&1 && fail "the admin service answered without a token"
run "${admin[@]}" --token_file=/etc/tessera/secrets/admin_token status
say "the admin service answers only with the admin token"
metrics=$(curl -fsS --cacert "$SECRETS/ca.pem" "https://127.0.0.1:$FE_HTTP/metrics") ||
  fail "curl /metrics"
for model in lenet resnet50; do
  count=$(echo "$metrics" | awk -v m="$model" '
    $1 ~ "^tessera_frontend_requests_total\\{" && $1 ~ "model=\"" m "\"" && $1 ~ "code=\"OK\"" { print int($2) }')
  [[ -n "$count" && "$count" -ge $N ]] ||
    fail "tessera_frontend_requests_total{model=\"$model\",code=\"OK\"} is '${count}', expected >= $N"
done

# --- 7. Prometheus scraped every target --------------------------------------
up=0
for _ in $(seq 1 60); do
  targets=$(curl -fsS "http://127.0.0.1:$PROM/api/v1/targets" 2> /dev/null) || true
  up=$(echo "$targets" | /usr/bin/python3 -c '
import json, sys
try:
    t = json.load(sys.stdin)["data"]["activeTargets"]
except Exception:
    print(0); sys.exit()
print(sum(1 for x in t if x.get("health") == "up"))')
  ((up >= 3)) && break
  sleep 1
done
((up >= 3)) || fail "Prometheus has $up of 3 targets up (curl http://127.0.0.1:$PROM/api/v1/targets)"
value=""
for _ in $(seq 1 30); do
  value=$(curl -fsS "http://127.0.0.1:$PROM/api/v1/query" \
    --data-urlencode 'query=sum(tessera_frontend_requests_total{code="OK"})' |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)')
  [[ "$value" -ge $((2 * N)) ]] && break
  sleep 1
done
[[ "$value" -ge $((2 * N)) ]] || fail "Prometheus saw $value OK requests, expected >= $((2 * N))"
say "Prometheus: 3 targets up, sum(tessera_frontend_requests_total{code=\"OK\"}) = $value"
say "PASS in $(($(date +%s) - START)) s"
