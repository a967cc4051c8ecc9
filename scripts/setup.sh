#!/usr/bin/env bash
# Sets Tessera up from nothing on Debian 12, idempotently:
#   1. installs the Debian packages the build, the tests and the model
#      generator need (only those missing; needs root or sudo),
#   2. configures and builds with CMake + Ninja into $TESSERA_BUILD_DIR
#      (default: build/), using ccache when present,
#   3. generates the shipped TorchScript models (fixed-seed random weights)
#      into models/<name>/1/model.pt when missing.
# Usage: scripts/setup.sh [--no-build] [--no-models]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${TESSERA_BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${TESSERA_BUILD_TYPE:-Release}"
JOBS="${TESSERA_JOBS:-$(nproc)}"
DO_BUILD=1
DO_MODELS=1
for arg in "$@"; do
  case "$arg" in
    --no-build) DO_BUILD=0 ;;
    --no-models) DO_MODELS=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  # toolchain (a minimal Debian has none of it); clang checks the
  # thread-safety annotations (scripts/check_thread_safety.py)
  g++ clang cmake ninja-build ccache git pkg-config
  # libraries
  libtorch-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  protobuf-compiler libabsl-dev libspdlog-dev libgtest-dev libgmock-dev
  libbenchmark-dev nlohmann-json3-dev libcpp-httplib-dev
  # HTTPS of the HTTP ports; the openssl tool makes the tests' certificates
  libssl-dev openssl
  # without it LibTorch falls back to reference BLAS (~10x slower)
  libopenblas0-openmp
  # model generation and the Python protocol-compatibility test
  python3-torch python3-torchvision python3-grpcio python3-protobuf
  # the metrics test parses /metrics with the Prometheus client's parser
  python3-prometheus-client
  # plots of benchmark and experiment results
  python3-matplotlib
  # the multi-namespace test (ip netns, veth) and health checks in scripts
  iproute2 curl
  # offline validation of kubernetes/ (tests/kubernetes): Kubernetes' field
  # names; the schema validator itself comes from npm
  python3-kubernetes python3-yaml
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js runs npm's Kubernetes schema validator; any node >= 18 will do
# (Debian's, or one already installed from elsewhere).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
  echo "==> installing ${#missing[@]} Debian package(s): ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
else
  echo "==> Debian packages: all present"
fi

if ((DO_BUILD)); then
  echo "==> building ($BUILD_TYPE) in $BUILD_DIR with $JOBS job(s)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi

if ((DO_MODELS)); then
  echo "==> generating models"
  # Debian's torch lives in the system Python, not in whatever python3 is
  # first on PATH.
  /usr/bin/python3 "$ROOT/models/generate_models.py" --repo "$ROOT/models"
fi
echo "==> setup done"
