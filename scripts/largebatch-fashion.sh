#!/usr/bin/env bash
# Issue 12's real-data large-batch runs: fashion-cnn (or MODEL) on Debian's Fashion-MNIST, trained for 5
# epochs by `measure baseline` at the baseline batch 128 and at 16x to 64x it under each
# learning-rate rule, for each seed. Every run writes its own curve (loss, train and test accuracy
# per epoch) to OUT/runs/b<batch>-<rule>-s<seed>.yaml; a run whose file already holds all its
# epochs is skipped, so the script resumes where it stopped. A run whose loss stops being finite
# is a result too: OUT/runs/<name>.yaml.failed says where it diverged. `measure largebatch-compare` turns
# the curves into the report (docs/LARGE_BATCH.md).
#   scripts/largebatch-fashion.sh OUT     (e.g. reports/cpu-epyc-2c/largebatch-fashion)
# Environment: SEEDS ("0 1"), BATCHES ("2048 3072 4096 6144 8192"; empty: the baselines only), RULES ("linear linear-warmup
# sqrt constant lars"; lars: LARS under the linear-warmup rule, measured only), EPOCHS (5), LR (0.1: the baseline's lr,
# which the rules scale), MODEL (fashion-cnn, or fashion-cnn-gap: its head pooled first), MOMENTUM (0.9, the
# course's; 0: plain SGD, the step equation's own setting), THREADS (cores), WORKERS (1), MEASURE (build/bin/measure).
set -euo pipefail
cd "$(dirname "$0")/.."
measure=${MEASURE:-build/bin/measure}
seeds=${SEEDS:-"0 1"}
batches=${BATCHES-"2048 3072 4096 6144 8192"}
rules=${RULES-"linear linear-warmup sqrt constant lars"}
epochs=${EPOCHS:-5}
lr=${LR:-0.1}
model=${MODEL:-fashion-cnn}
momentum=${MOMENTUM:-0.9}
threads=${THREADS:-$(nproc)}
workers=${WORKERS:-1}
if [ $# -ne 1 ]; then
  echo "usage: scripts/largebatch-fashion.sh OUT (e.g. reports/cpu-epyc-2c/largebatch-fashion)" >&2
  exit 2
fi
out=$1
mkdir -p "$out/runs"

run() {  # batch rule seed
  local file="$out/runs/b$1-$2-s$3.yaml"
  if [ -f "$file" ] && grep -q "epoch: $epochs\b" "$file"; then
    echo "largebatch-fashion: $file has $epochs epochs, skipped" >&2
    return
  fi
  if [ -f "$file.failed" ]; then
    echo "largebatch-fashion: $file.failed: $(cat "$file.failed"), skipped" >&2
    return
  fi
  rm -f "$file"  # a run cut short starts again: its partial curve is not a complete run
  echo "largebatch-fashion: batch $1, lr rule $2, seed $3 -> $file" >&2
  local rc=0
  # The baseline also samples its curve 20 times an epoch (the first epoch densest at its start):
  # 16x-64x the batch for 5 epochs are worth the baseline's first epoch or less.
  local evals=1
  if [ "$1" = 128 ]; then evals=20; fi
  # LARS (You et al. 2017) runs under the linear-warmup rule with its trust coefficient 0.001.
  local rule=(--lr-rule "$2")
  if [ "$2" = lars ]; then rule=(--lr-rule linear-warmup --optimizer lars --lars-eta 0.001); fi
  "$measure" baseline --model "$model" --device cpu --batch "$1" --micro-batches 4 --epochs "$epochs" \
    --evals-per-epoch "$evals" --lr "$lr" --momentum "$momentum" "${rule[@]}" --lr-base-batch 128 --warmup-epochs 1 --seed "$3" \
    --threads "$threads" --workers "$workers" --noise-scale best-effort --quiet --profile "$file" \
    > /dev/null 2> "$file.err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    # A run that diverged is a result (the file keeps its finished epochs); anything else stops.
    if grep -q "training diverged" "$file.err"; then
      grep "training diverged" "$file.err" | sed 's/^error: //' > "$file.failed"
      echo "largebatch-fashion: $(cat "$file.failed")" >&2
    else
      cat "$file.err" >&2
      exit "$rc"
    fi
  fi
  rm -f "$file.err"
}

for seed in $seeds; do
  run 128 constant "$seed"  # the baseline the predictions start from
  for rule in $rules; do
    for batch in $batches; do run "$batch" "$rule" "$seed"; done
  done
done
echo "largebatch-fashion: all runs in $out/runs" >&2
