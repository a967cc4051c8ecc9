#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole test suite with ctest.
# Tests labelled `gpu` run only where a GPU is visible (nvidia-smi works).
# Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${TESSERA_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"

EXCLUDE=()
if ! nvidia-smi >/dev/null 2>&1; then
  echo "==> no GPU visible: skipping tests labelled gpu"
  EXCLUDE=(-LE gpu)
fi
echo "==> running tests"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 "${EXCLUDE[@]}" "$@"
