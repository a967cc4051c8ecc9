#!/usr/bin/env bash
# ctest kubernetes.manifests: validates kubernetes/ offline (schema, unknown
# fields, consistency with the binaries; validate_manifests.py) and checks
# that the validator catches manifests broken on purpose.
# Usage: manifests_test.sh REPO_ROOT BIN_DIR CACHE_DIR
# The schema validator is npm's kubernetes-models, pinned by
# package-lock.json and installed once into CACHE_DIR (npm ci); the test
# fails (never skips) when the npm registry cannot be reached.
set -euo pipefail
ROOT="$1" BIN="$2" CACHE="$3"
HERE="$ROOT/tests/kubernetes"
for tool in node npm; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing (scripts/setup.sh installs it)"; exit 1; }
done
/usr/bin/python3 -c "import kubernetes, yaml" 2>/dev/null || {
  echo "python3-kubernetes and python3-yaml are missing (scripts/setup.sh)"
  exit 1
}
mkdir -p "$CACHE"
if ! cmp -s "$HERE/package-lock.json" "$CACHE/package-lock.json" ||
   [[ ! -f "$CACHE/node_modules/kubernetes-models/package.json" ]]; then
  cp "$HERE/package.json" "$HERE/package-lock.json" "$CACHE/"
  if ! (cd "$CACHE" && timeout 300 npm ci --no-audit --no-fund \
          --loglevel=error > npm.log 2>&1); then
    rm -f "$CACHE/package-lock.json"
    echo "npm ci of the schema validator (kubernetes-models) failed:"
    tail -20 "$CACHE/npm.log"
    exit 1
  fi
fi
exec /usr/bin/python3 "$HERE/validate_manifests.py" --root "$ROOT" \
  --bin_dir "$BIN" --node_modules "$CACHE/node_modules" --self_test
