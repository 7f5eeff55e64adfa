#!/usr/bin/env bash
# The committed CPU validation (docs/VALIDATION.md): scripts/validate.sh on 2 Gloo ranks with the
# settings of reports/cpu-epyc-2c: profile this machine, run real training with the PyTorch
# reference trainer, measure train and the textbook DDP script, and compare them with the
# simulator's predictions, in one go so the machine cannot drift between profile and runs.
#
# Usage: scripts/cpu-validation.sh [all|data|profile|runs|compare] [DIR] [CONFIG]
#   all (default) = data + profile + runs + compare
#   DIR     default reports/cpu-epyc-2c (the committed validation); CONFIG default
#           configs/cpu-validation.yaml (its profile: must point at DIR/profile.yaml)
# Environment: REPEATS (default 3), BATCHES (default "16 32 64 128 256"), RANKS ("1 2"),
#   WORKERS ("0 1"), TRAINERS ("pytorch trainsim plain"), SAMPLES (default 512), PYTHON,
#   PROFILE_BATCHES (default 16,32,64,128,256,512: every batch the runs use, and 512 for the sweep),
#   DATA (default build/validation-data: synthetic CIFAR-format images, not committed).
# Every step resumes as scripts/validate.sh's do: to start over, remove DIR/profile.yaml,
# DIR/runs.csv, DIR/plain-ddp-runs.csv and DIR/runs.keys first.
# Build first (scripts/setup.sh). Timing-sensitive: run it on an otherwise idle machine; it takes
# about an hour on 2 cores with the defaults. Progress goes to DIR/validation.log too; every run's
# command and output to DIR/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-all}
dir=${2:-reports/cpu-epyc-2c}
config=${3:-configs/cpu-validation.yaml}
case $step in
  all) steps=(data profile runs compare) ;;
  data|profile|runs|compare) steps=("$step") ;;
  *) echo "cpu-validation: unknown step '$step' (all, data, profile, runs, compare)" >&2; exit 2 ;;
esac
ranks=${RANKS:-1 2}
exec scripts/validate.sh --device cpu --gpus "$(echo $ranks | tr ' ' '\n' | sort -n | tail -n 1)" \
  --out "$dir" --config "$config" --data "${DATA:-build/validation-data}" --gpu-counts "$ranks" --batches "${BATCHES:-16 32 64 128 256}" \
  --workers "${WORKERS:-0 1}" --trainers "${TRAINERS:-pytorch trainsim plain}" \
  --samples "${SAMPLES:-512}" --repeats "${REPEATS:-3}" --threads 1 \
  --profile-batches "${PROFILE_BATCHES:-16,32,64,128,256,512}" --measure-flags "--warmup 1 --repeats 3" \
  "${steps[@]}"
