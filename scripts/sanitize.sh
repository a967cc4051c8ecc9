#!/usr/bin/env bash
# Builds the torch-free unit tests and the libFuzzer targets with clang,
# AddressSanitizer, UndefinedBehaviorSanitizer, coverage for the fuzzer and
# -Wthread-safety as errors, into $TESSERA_SANITIZE_DIR (default:
# build-sanitize/); runs the unit tests with leak detection, then each fuzz
# target for $TESSERA_FUZZ_RUNS executions (default 100000) from its
# committed seed corpus (tests/fuzz/corpus/<target>), printing the coverage
# it reached. Any sanitizer report, fuzzer crash, lock-annotation finding or
# failing test fails it. ~10 min on 2 cores from scratch (ccache makes
# reruns quick).
# Usage: scripts/sanitize.sh [gtest arguments]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TESSERA_SANITIZE_DIR:-$ROOT/build-sanitize}"
JOBS="${TESSERA_JOBS:-$(nproc)}"
FLAGS="-O1 -g0 -fno-omit-frame-pointer -fsanitize=address,undefined"
FLAGS+=" -fsanitize=fuzzer-no-link"
FLAGS+=" -fno-sanitize-recover=undefined -Wthread-safety -Werror=thread-safety"

if ! command -v clang++ >/dev/null; then
  echo "sanitize.sh: clang++ not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
echo "==> configuring the sanitizer build in $DIR"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DTESSERA_BUILD_BENCH=OFF -DTESSERA_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
echo "==> building tessera_unit_tests (clang, ASan + UBSan)"
cmake --build "$DIR" -j "$JOBS" --target tessera_unit_tests
echo "==> running the unit tests under ASan + UBSan"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$DIR/bin/tessera_unit_tests" "$@"

FUZZERS=(request_codec rest_codec config_loader batch_layout)
RUNS="${TESSERA_FUZZ_RUNS:-100000}"
echo "==> building the fuzz targets: ${FUZZERS[*]}"
cmake --build "$DIR" -j "$JOBS" --target "${FUZZERS[@]/%/_fuzzer}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for f in "${FUZZERS[@]}"; do
  echo "==> fuzzing $f: $RUNS executions from tests/fuzz/corpus/$f"
  mkdir -p "$WORK/$f"
  # New inputs go to the scratch corpus; the committed one is only read.
  if ! ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      "$DIR/bin/${f}_fuzzer" -runs="$RUNS" -seed=1 -max_len=16384 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$WORK/" \
      "$WORK/$f" "$ROOT/tests/fuzz/corpus/$f" > "$WORK/$f.log" 2>&1; then
    tail -n 60 "$WORK/$f.log" >&2
    echo "sanitize.sh: fuzz target $f failed (its input is in $WORK)" >&2
    trap - EXIT
    exit 1
  fi
  # The last status line: executions, edges covered (cov), features (ft).
  grep -E "^#[0-9]+[[:space:]]+DONE" "$WORK/$f.log" | tail -n 1 || true
  grep -E "stat::(number_of_executed_units|average_exec_per_sec|new_units_added)" \
    "$WORK/$f.log" || true
done
