#!/usr/bin/env bash
# The collective model's validation (docs/SCALE.md "Validation"): every config under configs/nccl/
# (a topology from the catalog's link figures, a published all_reduce_perf log beside it) into
# reports/nccl-validation/<name>/ (the table and collectives.csv), the error lines into
# reports/nccl-validation/summary.txt.
# Run from the repository root after building: scripts/nccl-validation.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=reports/nccl-validation
mkdir -p "$out"
: > "$out/summary.txt.tmp"
for config in configs/nccl/*.yaml; do
  name=$(basename "$config" .yaml)
  echo "nccl-validation: $config" >&2
  mkdir -p "$out/$name"
  "$build/bin/simulate" "$config" --out "$out/$name" > "$out/$name/table.txt"
  { echo "$name ($config):"; grep -E '^(calibrated )?(busbw|time) error' "$out/$name/table.txt"; } >> "$out/summary.txt.tmp"
done
mv "$out/summary.txt.tmp" "$out/summary.txt"
cat "$out/summary.txt"
