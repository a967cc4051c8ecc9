#!/usr/bin/env bash
# On a GPU node with a CUDA PyTorch (docs/cuda.md), from the repository root:
#   1. builds tessera_proxy alone (TESSERA_PROXY_ONLY) against the LibTorch
#      of the python3 that has torch, into build-cuda/,
#   2. generates the shipped models with that torch (models/generate_models.py),
#   3. measures the models' MPS profiles into profiles/cuda/
#      (scripts/profile_mps.py),
#   4. runs the gpu tests (RealGpuTest) with the CUDA proxy beside the
#      torch-free tessera_backend of a regular build.
# Usage: scripts/cuda_node.sh [--debs DIR] [--bin DIR] [--jobs N]
#                             [--no-profile] [--no-test] [-- PROFILE_ARGS...]
#   --debs DIR  Debian .debs of Protobuf, Abseil, spdlog, fmt, nlohmann-json
#               (-dev and runtime) and gRPC's runtime, unpacked into
#               build-cuda/debs and used first (nodes without those packages)
#   --bin DIR   a regular build's bin/ (tessera_backend, tessera_cluster_tests);
#               default build/bin
#   after --, arguments for scripts/profile_mps.py
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DEBS="" BIN="$ROOT/build/bin" JOBS="$(nproc)" PROFILE=1 TEST=1
PROFILE_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --debs) DEBS="$(cd "$2" && pwd)"; shift 2 ;;
    --bin) BIN="$(cd "$2" && pwd)"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --no-profile) PROFILE=0; shift ;;
    --no-test) TEST=0; shift ;;
    --) shift; PROFILE_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "cuda_node.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BUILD="$ROOT/build-cuda"
mkdir -p "$BUILD"
step() { echo "== $(date +%T) $*"; }
status=0

step "node"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda",
  torch.version.cuda, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)'
g++ --version | head -1; cmake --version | head -1
command -v nvidia-cuda-mps-control || echo "no nvidia-cuda-mps-control"

PREFIX=""
if [[ -n "$DEBS" ]]; then
  PREFIX="$BUILD/debs"
  mkdir -p "$PREFIX"
  for f in "$DEBS"/*.deb; do dpkg -x "$f" "$PREFIX"; done
  export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  PREFIX="$PREFIX/usr"
fi

step "build tessera_proxy against $(python3 -c 'import torch; print(torch.__path__[0])')"
(cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTESSERA_PROXY_ONLY=ON ${PREFIX:+-DCMAKE_PREFIX_PATH=$PREFIX} \
    -DPython3_EXECUTABLE="$(command -v python3)" \
    -DTESSERA_TORCH_PACKAGE_DIR="$(python3 -c 'import torch; print(torch.__path__[0])')" \
  && ninja -C "$BUILD" -j "$JOBS" tessera_proxy_main) > "$BUILD/build.log" 2>&1 &
build_pid=$!

step "models"
# One model at a time: model.pt is written before segments.pt, so a model
# whose segments fail to export still serves whole.
for m in lenet resnet18 mobilenet_v3_small bert_tiny; do
  python3 models/generate_models.py --repo models --only "$m" 2>&1 | tail -2
done

wait "$build_pid"
if [[ $? -ne 0 ]]; then
  echo "build failed:"; tail -40 "$BUILD/build.log"; status=1
else
  tail -1 "$BUILD/build.log"
  "$BUILD/bin/tessera_proxy" --help | head -2
fi

if [[ $PROFILE -eq 1 ]]; then
  step "profile"
  mps=()
  command -v nvidia-cuda-mps-control > /dev/null || mps=(--no_mps)
  if ! timeout 360 python3 scripts/profile_mps.py "${mps[@]}" "${PROFILE_ARGS[@]}"; then
    if [[ ${#mps[@]} -eq 0 ]]; then
      echo "profiling under MPS failed; again without MPS (whole GPU)"
      timeout 240 python3 scripts/profile_mps.py --no_mps "${PROFILE_ARGS[@]}" || status=1
    else
      status=1
    fi
  fi
fi

if [[ $TEST -eq 1 && -x "$BUILD/bin/tessera_proxy" ]]; then
  step "gpu tests"
  cp "$BIN/tessera_backend" "$BUILD/bin/" &&
  TESSERA_GPU_BIN_DIR="$BUILD/bin" TESSERA_GPU_MODEL_DIR="$ROOT/models" \
    "$BIN/tessera_cluster_tests" --gtest_filter='RealGpu*' || status=1
fi
step "done (status $status)"
exit $status
