#!/usr/bin/env bash
# The CPU validation (docs/VALIDATION.md): profile this machine, run real training with BOTH
# trainers (the PyTorch reference trainer under torchrun, and measure train), and compare them with
# the simulator's predictions, in one go so the machine cannot drift between profile and runs.
#
# Usage: scripts/cpu-validation.sh [all|data|profile|runs|compare] [DIR] [CONFIG]
#   all (default) = data + profile + runs + compare
#   DIR     default reports/cpu-epyc-2c (the committed validation); CONFIG default
#           configs/cpu-validation.yaml (its profile: must point at DIR/profile.yaml)
# Environment: REPEATS (default 3), BATCHES (default "16 32 64 128 256"), RANKS ("1 2"),
#   WORKERS ("0 1"), TRAINERS ("pytorch trainsim plain"), SAMPLES (default 512), PYTHON (/usr/bin/python3),
#   PROFILE_BATCHES (default 16,32,64,128,256,512: every batch the runs use, and 512 for the sweep).
# Build first (scripts/setup.sh). Timing-sensitive: run it on an otherwise idle machine; it takes
# about an hour on 2 cores with the defaults. Progress goes to DIR/validation.log too.
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-all}
dir=${2:-reports/cpu-epyc-2c}
config=${3:-configs/cpu-validation.yaml}
measure=${MEASURE:-build/bin/measure}
simulate=${SIMULATE:-build/bin/simulate}
python=${PYTHON:-/usr/bin/python3}
repeats=${REPEATS:-3}
batches=${BATCHES:-16 32 64 128 256}
ranks_list=${RANKS:-1 2}
workers_list=${WORKERS:-0 1}
trainers=${TRAINERS:-pytorch trainsim plain}
samples=${SAMPLES:-512}
profile_batches=${PROFILE_BATCHES:-16,32,64,128,256,512}
# Synthetic CIFAR-format images (CIFAR-10 cannot be downloaded here), written by measure make-data
# with a SYNTHETIC marker so every profile and row says `synthetic`. Not committed.
data=${DATA:-build/validation-data}
mkdir -p "$dir"
log="$dir/validation.log"

say() { echo "cpu-validation: $*" | tee -a "$log" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }

if [[ $step == data || $step == all ]]; then
  if [[ ! -f $data/SYNTHETIC ]]; then
    "$measure" make-data --out "$data" --train-samples 50000 --test-samples 10000
  fi
fi

if [[ $step == profile || $step == all ]]; then
  say "profile: start (load $(load))"
  # One intra-op thread: each rank of a 2-rank run on 2 cores has one core.
  "$measure" --device cpu --threads 1 --batches "$profile_batches" --warmup 1 --repeats 3 --ranks 2 \
    --data "$data" --pytorch "$python" --out "$dir/profile.yaml" 2>&1 | tee -a "$log"
  say "profile: done (load $(load))"
fi

# One run of one trainer: appends a row to DIR/runs.csv (each run times the calibration probe
# first and records the load average before and after). `plain` is a textbook DDP script that is
# not the project's own trainer (scripts/validation/plain_ddp.py): its rows go to
# DIR/plain-ddp-runs.csv and are scored on their own, into DIR/validation-plain-ddp/.
run_one() {
  local trainer=$1 ranks=$2 batch=$3 workers=$4
  local common=(--batch-per-gpu "$batch" --workers "$workers" --train-samples "$samples" --epochs 2
                --threads 1 --device cpu --runs "$dir/runs.csv" --quiet)
  if [[ $trainer == plain ]]; then
    # The script times no probe of its own: the calibration probe right before it, as the
    # reference trainer times one before its run.
    local probe
    probe=$("$python" measure/pytorch/probe.py --device cpu --threads 1 | cut -d' ' -f2)
    timeout --kill-after=30 1800 "$python" -m torch.distributed.run --redirects 1 --tee 1 --standalone \
      --nproc_per_node "$ranks" scripts/validation/plain_ddp.py --data "$data" --batch "$batch" \
      --workers "$workers" --samples "$samples" --epochs 2 --threads 1 2>/dev/null |
      "$python" scripts/validation/plain_ddp_row.py "$dir/plain-ddp-runs.csv" --probe-s "$probe" 2>/dev/null
  elif [[ $trainer == pytorch ]]; then
    # Debian's torchrun 1.13 needs --redirects 1 --tee 1 on Python 3.11 (docs/PYTORCH.md).
    timeout --kill-after=30 1800 "$python" -m torch.distributed.run --redirects 1 --tee 1 --standalone \
      --nproc_per_node "$ranks" measure/pytorch/train.py --data "$data" "${common[@]}" > /dev/null
  else
    timeout --kill-after=30 1800 "$measure" train --strategy ddp --gpus "$ranks" --data "$data" "${common[@]}" \
      > /dev/null
  fi
}

if [[ $step == runs || $step == all ]]; then
  # Interleaved repeats: every configuration once per round, trainers alternating, so a slow spell
  # of the machine spreads over all configurations instead of biasing one.
  total=0
  for _ in $(seq "$repeats"); do for _ in $ranks_list; do for _ in $workers_list; do for _ in $batches; do
    for _ in $trainers; do total=$((total + 1)); done; done; done; done; done
  done_runs=0
  start=$(date +%s)
  for round in $(seq "$repeats"); do
    for ranks in $ranks_list; do
      for workers in $workers_list; do
        for batch in $batches; do
          for trainer in $trainers; do
            done_runs=$((done_runs + 1))
            elapsed=$(( $(date +%s) - start ))
            say "run $done_runs/$total (round $round): $trainer ddp ranks=$ranks batch=$batch workers=$workers" \
                "(load $(load), ${elapsed}s elapsed)"
            # A run that fails or hangs (PyTorch 1.13's Gloo can hang at exit) is logged and
            # skipped: it leaves no row, and the other runs go on.
            if ! run_one "$trainer" "$ranks" "$batch" "$workers"; then
              say "run $done_runs FAILED: $trainer ddp ranks=$ranks batch=$batch workers=$workers"
            fi
          done
        done
      done
    done
  done
fi

if [[ $step == compare || $step == all ]]; then
  mkdir -p "$dir/validation"
  "$simulate" "$config" --compare "$dir/runs.csv" --out "$dir/validation" | tee "$dir/validation/stdout.txt"
  if [[ -f $dir/plain-ddp-runs.csv ]]; then
    mkdir -p "$dir/validation-plain-ddp"
    "$simulate" "$config" --compare "$dir/plain-ddp-runs.csv" --out "$dir/validation-plain-ddp" |
      tee "$dir/validation-plain-ddp/stdout.txt"
  fi
fi
