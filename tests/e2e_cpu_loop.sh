#!/usr/bin/env bash
# End to end on CPU at tiny size (issue 4): measure a profile -> real DDP runs (1 and 2 Gloo
# ranks) -> simulate --compare; checks that every output file is produced and the last line.
# The profile's pytorch section is measured when a Python with torch and torchvision is found
# (measure --pytorch auto) and checked then.
# Usage: e2e_cpu_loop.sh BIN_DIR
set -euo pipefail
bin=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/trainsim-e2e-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/measure" --device cpu --models resnet18-cifar --batches 4,8 --warmup 0 --repeats 1 \
  --threads 1 --ranks 2 --loader-samples 256 --collectives-max-bytes 65536 \
  --collective-repeats 2 --out "$work/profile.yaml" 2> "$work/measure.log" \
  || { cat "$work/measure.log" >&2; fail "measure exited non-zero"; }
[ -s "$work/profile.yaml" ] || fail "no profile written"
[ -s "$work/collectives.txt" ] || fail "no collectives.txt written"
grep -q '^calibration: {model: "resnet18-cifar", batch: 32, threads: 1,' "$work/profile.yaml" \
  || fail "no calibration probe in the profile"
grep -q '^    ddp_iteration_s: \[' "$work/profile.yaml" || fail "no ddp_iteration_s in the profile"
grep -q '^      - {bytes: 9461800, params: \[61, 60, 58, 59, 57\]}' "$work/profile.yaml" \
  || fail "the profile's first DDP bucket is not PyTorch's"
if /usr/bin/python3 -c 'import torch, torchvision' 2> /dev/null || python3 -c 'import torch, torchvision' 2> /dev/null; then
  grep -q '^pytorch:' "$work/profile.yaml" || fail "Python has torch but the profile has no pytorch section"
fi

for gpus in 1 2; do
  for batch in 4 8; do
    "$bin/measure" train --device cpu --strategy ddp --gpus "$gpus" --batch-per-gpu "$batch" \
      --train-samples 32 --epochs 2 --workers 0 --threads 1 --quiet --runs "$work/runs.csv" \
      || fail "measure train --gpus $gpus --batch-per-gpu $batch exited non-zero"
  done
done
# Header + one row per run; 23 columns, the probe timed before every run.
[ "$(wc -l < "$work/runs.csv")" -eq 5 ] || fail "runs.csv should have 5 lines: $(cat "$work/runs.csv")"
[ "$(awk -F, 'NF != 23' "$work/runs.csv" | wc -l)" -eq 0 ] || fail "runs.csv rows without 23 columns"
[ "$(awk -F, 'NR > 1 && ($18 != "trainsim" || $21 == "")' "$work/runs.csv" | wc -l)" -eq 0 ] \
  || fail "a row without trainer trainsim or probe_s: $(cat "$work/runs.csv")"

# The PyTorch reference trainer too (real torchrun, real Gloo), when this machine has PyTorch:
# its row joins the same comparison, predicted with PyTorch's own loop and DataLoader.
python=""
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import torch, torchvision' 2> /dev/null; then python=$candidate; break; fi
done
expected_runs=4
if [ -n "$python" ]; then
  "$bin/measure" make-data --out "$work/data" --train-samples 64 --test-samples 8 > /dev/null \
    || fail "measure make-data exited non-zero"
  "$python" -m torch.distributed.run --redirects 1 --tee 1 --standalone --nproc_per_node 2 \
    "$(dirname "$0")/../measure/pytorch/train.py" --data "$work/data" --device cpu \
    --batch-per-gpu 8 --train-samples 32 --epochs 2 --workers 0 --threads 1 --quiet --no-probe \
    --runs "$work/runs.csv" > "$work/torchrun.log" 2>&1 \
    || { cat "$work/torchrun.log" >&2; fail "the PyTorch reference trainer exited non-zero"; }
  [ "$(awk -F, 'NR > 1 && $18 == "pytorch"' "$work/runs.csv" | wc -l)" -eq 1 ] \
    || fail "no pytorch row: $(cat "$work/runs.csv")"
  expected_runs=5
fi

cat > "$work/config.yaml" <<YAML
profile: profile.yaml
model: resnet18-cifar
trainer: trainsim
dataset: {train_samples: 32}
loader: {workers: 0}
sweep:
  strategy: [ddp]
  gpus: [1, 2]
  batch_per_gpu: [4, 8]
YAML
"$bin/simulate" "$work/config.yaml" --compare "$work/runs.csv" --out "$work/out" \
  > "$work/stdout" 2> "$work/stderr" || { cat "$work/stderr" >&2; fail "simulate --compare exited non-zero"; }
for f in report.md comparison.csv predictions.csv predictions.md; do
  [ -s "$work/out/$f" ] || fail "missing $f"
done
if command -v gnuplot > /dev/null; then
  for f in epoch_vs_batch.svg speedup_vs_gpus.svg predicted_vs_measured.svg; do
    grep -q "</svg>" "$work/out/$f" || fail "missing or incomplete $f"
  done
fi
last=$(tail -n 1 "$work/stdout")
if [ -n "${TRAINSIM_SANITIZED:-}" ] && [ "$expected_runs" = 5 ] \
   && grep -q "^- ddp:2:8 (pytorch, .*the profile cannot predict it: .*less than half the sum of its timed parts" \
        "$work/out/report.md"; then
  # A sanitizer build's C++ timings are of instrumented code (tests/CMakeLists.txt).
  expected_runs=4
fi
[[ $last =~ ^MAPE\ epoch_s:\ [0-9]+\.[0-9]%\ over\ ${expected_runs}\ runs\;\ bias\ [-+][0-9]+\.[0-9]%$ ]] || fail "last line: '$last'"
if [ -n "$python" ] && [ "$expected_runs" = 5 ]; then
  grep -q '^MAPE epoch_s (pytorch, 2 ranks): ' "$work/stdout" || fail "no pytorch MAPE line: $(cat "$work/stdout")"
fi
echo "e2e: profile, $expected_runs runs and the comparison report produced; $last"
