#!/usr/bin/env bash
# The fit's validation (docs/FIT.md "Validation"): every config under configs/fit/ fitted on its
# observations: and scored on its held_out: cells, each into reports/fit-validation/<name>/
# (fit.txt, predictions.csv, predictions.md, notes.md), and the headline lines into
# reports/fit-validation/summary.txt.
# Run from the repository root after building: scripts/fit-validation.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=reports/fit-validation
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary.tmp"
for config in configs/fit/*.yaml; do
  name=$(basename "$config" .yaml)
  echo "fit-validation: $config" >&2
  mkdir -p "$out/$name"
  "$build/bin/simulate" "$config" --out "$out/$name" > "$out/$name/stdout.txt"
  {
    echo "$name ($config):"
    grep -E '^  (compute_efficiency|flop_rate) ' "$out/$name/fit.txt"
    tail -n 1 "$out/$name/fit.txt"
  } >> "$summary.tmp"
done
mv "$summary.tmp" "$summary"
cat "$summary"
