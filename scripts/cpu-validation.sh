#!/usr/bin/env bash
# Reproduces the committed CPU validation under reports/<machine>/ (issue 4) on a development
# machine: the profile, the real runs, and the predicted-vs-measured report.
# Usage: scripts/cpu-validation.sh [profile|runs|compare|all] [DIR] [CONFIG]
#   (default all; build with scripts/setup.sh first)
# Timing-sensitive: run it on an otherwise idle machine (about 20 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-all}
measure=${MEASURE:-build/bin/measure}
simulate=${SIMULATE:-build/bin/simulate}
# The committed validation's folder and config (configs/cpu-validation.yaml points at it). On a
# machine of another kind, pass its own folder: scripts/cpu-validation.sh all reports/<machine>
# and copy the config with `profile:` pointing there.
dir=${2:-reports/cpu-xeon-2c}
config=${3:-configs/cpu-validation.yaml}

if [[ $step == profile || $step == all ]]; then
  # One intra-op thread: each rank of a 2-rank run on 2 cores gets one core.
  "$measure" --device cpu --threads 1 --batches 32,128,512 --warmup 1 --repeats 3 --ranks 2 \
    --out "$dir/profile.yaml"
fi
if [[ $step == runs || $step == all ]]; then
  # Appends: run the step again for more repeats (simulate --compare averages them).
  for gpus in 1 2; do
    for batch in 32 64 128; do
      "$measure" train --device cpu --strategy ddp --gpus "$gpus" --batch-per-gpu "$batch" \
        --train-samples 1024 --workers 0 --threads 1 --epochs 2 --runs "$dir/runs.csv"
    done
  done
fi
if [[ $step == compare || $step == all ]]; then
  "$simulate" "$config" --compare "$dir/runs.csv" --out "$dir/validation"
fi
