#!/usr/bin/env bash
# Any-model validation (docs/ANY_MODEL.md): two networks other than ResNet-18, profiled by the two
# routes a user has, predicted, and compared with real epochs of the PyTorch reference trainer.
#   export   export_models.py writes the TorchScript files (build/any-model/models, not committed)
#   profile  per model: `measure torchscript` adds MODEL to PROFILE (C++ timings, host contention,
#            the PyTorch loop)
#   trace    per model and batch: trace_step.py takes a torch.profiler trace of one DDP step and
#            `measure import-trace --step-seconds` adds it to MODEL-trace in PROFILE
#   runs     train.py --model FILE under torchrun, 1 and 2 ranks, interleaved repeats, rows in
#            DIR/runs-MODEL.csv
#   compare  simulate configs/any-model/MODEL.yaml and MODEL-trace.yaml --compare DIR/runs-MODEL.csv
#            into DIR/validation/MODEL-torchscript and DIR/validation/MODEL-trace
# Usage: scripts/any-model-validation.sh [all|export|profile|trace|runs|compare] [DIR]
#   DIR default reports/cpu-epyc-2c/any-model
# Environment: MODELS ("resnet50 vit-tiny"), PROFILE (reports/cpu-epyc-2c/profile.yaml: the configs
#   point at it), BATCHES ("32 64"), RANKS ("1 2"), WORKERS ("0 1"), REPEATS (4),
#   PYTHON (/usr/bin/python3). Samples per epoch: 1024, vit-tiny 512 (Debian's generic BLAS runs
#   its matmuls slowly). Build first (scripts/setup.sh); run it on an otherwise idle machine
#   (about an hour on 2 cores). Progress goes to DIR/validation.log too.
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-all}
dir=${2:-reports/cpu-epyc-2c/any-model}
measure=${MEASURE:-build/bin/measure}
simulate=${SIMULATE:-build/bin/simulate}
python=${PYTHON:-/usr/bin/python3}
profile=${PROFILE:-reports/cpu-epyc-2c/profile.yaml}
models=${MODELS:-resnet50 vit-tiny}
batches=${BATCHES:-32 64}
ranks_list=${RANKS:-1 2}
workers_list=${WORKERS:-0 1}
repeats=${REPEATS:-4}
files=build/any-model/models
data=${DATA:-build/validation-data}
mkdir -p "$dir"
log="$dir/validation.log"

say() { echo "any-model-validation: $*" | tee -a "$log" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }
samples_of() { if [[ $1 == vit-tiny ]]; then echo 512; else echo 1024; fi; }
comma() { echo "$*" | tr ' ' ','; }

if [[ $step == export || $step == all ]]; then
  "$python" measure/pytorch/export_models.py --out "$files" --models "$(comma $models)" | tee -a "$log"
  if [[ ! -f $data/SYNTHETIC ]]; then
    "$measure" make-data --out "$data" --train-samples 50000 --test-samples 10000
  fi
fi

if [[ $step == profile || $step == all ]]; then
  for model in $models; do
    say "profile $model: start (load $(load))"
    # One intra-op thread: each rank of a 2-rank run on 2 cores has one core.
    "$measure" torchscript --model "$files/$model.pt" --name "$model" --input-shape 3x32x32 --classes 10 \
      --batches "$(comma $batches)" --threads 1 --ranks 2 --pytorch "$python" --out "$profile" 2>&1 | tee -a "$log"
    say "profile $model: done (load $(load))"
  done
fi

if [[ $step == trace || $step == all ]]; then
  for model in $models; do
    for batch in $batches; do
      # A torch.profiler trace of one DDP step per batch size, imported with the untraced step's
      # time (--step-seconds); each batch joins the same model.
      say "trace $model at batch $batch (load $(load))"
      trace=$dir/trace-$model-b$batch
      "$python" measure/pytorch/trace_step.py --model "$files/$model.pt" --batch "$batch" --threads 1 \
        --out "$trace" 2>&1 | grep -v "^WARNING: Logging\|CPUAllocator" | tee -a "$log"
      "$measure" import-trace "$trace/trace.json" --name "$model-trace" --batch "$batch" \
        --params "$trace/params.txt" --step-seconds "$(cat "$trace/step_seconds.txt")" --out "$profile" 2>&1 \
        | cut -c1-300 | tee -a "$log"
      gzip -9f "$trace/trace.json"  # committed compressed; gunzip before importing it again
    done
  done
fi

if [[ $step == runs || $step == all ]]; then
  total=0
  for _ in $(seq "$repeats"); do for _ in $models; do for _ in $ranks_list; do for _ in $workers_list; do
    for _ in $batches; do total=$((total + 1)); done; done; done; done; done
  n=0
  start=$(date +%s)
  # Interleaved: every configuration once per round, so a slow spell spreads over all of them.
  for round in $(seq "$repeats"); do
    for model in $models; do
      for ranks in $ranks_list; do
        for workers in $workers_list; do
          for batch in $batches; do
            n=$((n + 1))
            say "run $n/$total (round $round): $model ddp ranks=$ranks batch=$batch workers=$workers" \
                "(load $(load), $(( $(date +%s) - start ))s elapsed)"
            # Debian's torchrun 1.13 needs --redirects 1 --tee 1 on Python 3.11 (docs/PYTORCH.md).
            if ! timeout --kill-after=30 1800 "$python" -m torch.distributed.run --redirects 1 --tee 1 \
                --standalone --nproc_per_node "$ranks" measure/pytorch/train.py --data "$data" \
                --model "$files/$model.pt" --model-name "$model" --batch-per-gpu "$batch" --workers "$workers" \
                --train-samples "$(samples_of "$model")" --epochs 2 --threads 1 --device cpu \
                --runs "$dir/runs-$model.csv" --quiet > /dev/null; then
              say "run $n FAILED: $model ddp ranks=$ranks batch=$batch workers=$workers"
            fi
          done
        done
      done
    done
  done
fi

if [[ $step == compare || $step == all ]]; then
  report=$dir/report.md
  {
    echo "# Any-model validation: predicted vs measured epochs (written by scripts/any-model-validation.sh compare)"
    echo
    echo "The PyTorch reference trainer (train.py --model) under torchrun, DDP on 1 and 2 ranks, one"
    echo "thread each, on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); predictions by"
    echo "simulate from the bundled profile's models measured by each route (docs/ANY_MODEL.md)."
    echo
  } > "$report"
  for model in $models; do
    for route in torchscript trace; do
      config=configs/any-model/$model.yaml
      [[ $route == trace ]] && config=configs/any-model/$model-trace.yaml
      out=$dir/validation/$model-$route
      mkdir -p "$out"
      "$simulate" "$config" --compare "$dir/runs-$model.csv" --out "$out" > "$out/stdout.txt"
      say "$model, $route: $(grep -m1 '^MAPE epoch_s:' "$out/stdout.txt" || echo 'no MAPE line')"
      {
        echo "## $model, $route route ($config)"
        echo
        grep '^MAPE epoch_s' "$out/stdout.txt" | sed 's/^/    /'
        echo
      } >> "$report"
    done
  done
fi
