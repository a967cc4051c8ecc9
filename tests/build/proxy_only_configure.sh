#!/usr/bin/env bash
# A GPU node's build (docs/cuda.md) configures: TESSERA_PROXY_ONLY with
# LibTorch linked from a Python torch package (here Debian's CPU one), and
# the build it generates has tessera_proxy and none of the gRPC binaries.
# Usage: proxy_only_configure.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$1" work="$2"
torch_dir="$(/usr/bin/python3 -c 'import torch; print(torch.__path__[0])')"
rm -rf "$work"
cmake -S "$src" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTESSERA_PROXY_ONLY=ON -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DTESSERA_TORCH_PACKAGE_DIR="$torch_dir" > "$work.log" 2>&1 ||
  { cat "$work.log"; exit 1; }
grep -q "LibTorch from $torch_dir" "$work.log" ||
  { echo "TorchPackage.cmake did not run"; cat "$work.log"; exit 1; }
targets="$(ninja -C "$work" -t targets all)"
grep -q "^bin/tessera_proxy:" <<< "$targets" ||
  { echo "no bin/tessera_proxy target"; exit 1; }
for unwanted in tessera_backend tessera_frontend tessera_unit_tests grpc_service.grpc.pb.cc; do
  if grep -q "$unwanted" <<< "$targets"; then
    echo "the proxy-only build has $unwanted"; exit 1
  fi
done
echo "proxy-only build configured: $(grep -c '' <<< "$targets") targets, tessera_proxy among them, no gRPC"
rm -rf "$work" "$work.log"
