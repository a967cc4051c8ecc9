#!/usr/bin/env bash
# scripts/profile_mps.py's method dry-run on the CPU (no GPU here): its
# profiles and pairs.csv must load in Tessera's profile reader and give the
# interference fit one sample per pair row.
# Usage: profile_mps_dry_run.sh SOURCE_DIR BIN_DIR WORK_DIR
set -euo pipefail
src="$1" bin="$2" work="$3"
rm -rf "$work"
/usr/bin/python3 "$src/scripts/profile_mps.py" --torch_device=cpu \
  --model_repository="$src/models" --models=lenet,bert_tiny --batches=1,2 \
  --runs=3 --warmup=1 --pair_seconds=0.2 --out="$work"
for m in lenet bert_tiny; do
  grep -q "batch_size: 2" "$work/cuda/$m.pbtxt" ||
    { echo "$m: no batch 2 cell"; exit 1; }
done
rows=$(($(wc -l < "$work/cuda/pairs.csv") - 1))
out="$("$bin/tessera_fit_interference" --profile_dir="$work/cuda")"
echo "$out"
grep -q "2 profiles, $rows pair samples" <<< "$out" ||
  { echo "expected 2 profiles and $rows pair samples"; exit 1; }
[[ $rows -eq 20 ]] || { echo "expected 20 pair rows (10 pairs x 2 sides), got $rows"; exit 1; }
rm -rf "$work"
