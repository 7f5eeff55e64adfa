#!/usr/bin/env bash
# End to end on CPU at tiny size, through scripts/validate.sh: measure a profile -> real DDP runs (1
# and 2 Gloo ranks) -> simulate --compare; checks every output file, the resume, the last line.
# The profile's pytorch section is measured when a Python with torch and torchvision is found
# (validate.sh passes it to measure --pytorch) and checked then.
# Usage: e2e_cpu_loop.sh BIN_DIR
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/trainsim-e2e-XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export MEASURE=$bin/measure SIMULATE=$bin/simulate
# The user's one command (scripts/validate.sh) at tiny size: 512 synthetic images, batches 4 and 8
# on 1 and 2 Gloo ranks, one round, 2 iterations per rank and epoch.
"$bin/measure" make-data --out "$work/data" --train-samples 512 --test-samples 8 > /dev/null \
  || fail "measure make-data exited non-zero"
validate() {
  "$root/scripts/validate.sh" --device cpu --gpus 2 --out "$work" --data "$work/data" --batches "4 8" \
    --samples 32 --epochs 2 --workers 0 --threads 1 --repeats 1 "$@" >> "$work/validate.out" 2>&1 \
    || { cat "$work/validate.out" >&2; fail "scripts/validate.sh $* exited non-zero"; }
}
# No loader workers and no DataParallel run: the pytorch section's worker start-up and GIL
# timings would price nothing here (tests/pytorch/test_profile.py measures both).
validate --trainers trainsim --measure-flags "--models resnet18-cifar --warmup 0 --repeats 1 \
  --loader-samples 256 --collectives-max-bytes 65536 --collective-repeats 2 --skip fork,gil" data profile runs
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

# Header + one row per run; 23 columns, the probe timed before every run.
[ "$(wc -l < "$work/runs.csv")" -eq 5 ] || fail "runs.csv should have 5 lines: $(cat "$work/runs.csv")"
[ "$(awk -F, 'NF != 23' "$work/runs.csv" | wc -l)" -eq 0 ] || fail "runs.csv rows without 23 columns"
[ "$(awk -F, 'NR > 1 && ($18 != "trainsim" || $21 == "")' "$work/runs.csv" | wc -l)" -eq 0 ] \
  || fail "a row without trainer trainsim or probe_s: $(cat "$work/runs.csv")"
# Resumable: the same runs again make nothing new.
validate --trainers trainsim runs
grep -q '^validate: runs: 4 in 1 rounds, 4 made before, 0 to make$' "$work/validate.out" \
  || fail "the second call did not skip the runs made: $(tail -n 3 "$work/validate.out")"
[ "$(wc -l < "$work/runs.csv")" -eq 5 ] || fail "the second call changed runs.csv"

# The PyTorch reference trainer too (real torchrun, real Gloo), when this machine has PyTorch:
# its row joins the same comparison, predicted with PyTorch's own loop and DataLoader.
python=""
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import torch, torchvision' 2> /dev/null; then python=$candidate; break; fi
done
expected_runs=4
if [ -n "$python" ]; then
  PYTHON=$python validate --trainers pytorch --gpu-counts 2 --batches 8 --no-probe runs
  [ "$(awk -F, 'NR > 1 && $18 == "pytorch"' "$work/runs.csv" | wc -l)" -eq 1 ] \
    || fail "no pytorch row: $(cat "$work/runs.csv")"
  expected_runs=5
fi
[ "$(grep -l '^# exit 0$' "$work"/logs/run-*.log | wc -l)" -eq "$expected_runs" ] \
  || fail "not one log with its exit status per run: $(ls "$work/logs")"
grep -q '^\$ .*measure train --strategy ddp --gpus 2 --batch-per-gpu 8 ' "$work/logs/run-1-trainsim-ddp-2x8-w0.log" \
  || fail "a run's log without its command line"

GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824 validate --trainers "trainsim pytorch" compare
for f in report.md comparison.csv predictions.csv predictions.md notes.md; do
  [ -s "$work/validation/$f" ] || fail "missing $f"
done
if command -v gnuplot > /dev/null; then
  for f in epoch_vs_batch.svg speedup_vs_gpus.svg predicted_vs_measured.svg; do
    grep -q "</svg>" "$work/validation/$f" || fail "missing or incomplete $f"
  done
fi
grep -q "^- \`runs.csv\`: $expected_runs measured runs: " "$work/README.md" || fail "the folder's README: $(cat "$work/README.md")"
# The calls as run, the allocator's setting (glibc's, set for the compare call) in front.
grep -q '^- [0-9TZ:-]*: `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824 scripts/validate.sh --device cpu ' \
  "$work/README.md" || fail "the README's calls without the allocator's setting: $(cat "$work/README.md")"
last=$(tail -n 1 "$work/validation/stdout.txt")
if [ -n "${TRAINSIM_SANITIZED:-}" ] && [ "$expected_runs" = 5 ] \
   && grep -q "^- ddp:2:8 (pytorch, .*the profile cannot predict it: .*less than half the sum of its timed parts" \
        "$work/validation/report.md"; then
  # A sanitizer build's C++ timings are of instrumented code (tests/CMakeLists.txt).
  expected_runs=4
fi
# Each configuration ran once: N configurations of N runs.
[[ $last =~ ^MAPE\ epoch_s:\ [0-9]+\.[0-9]%\ over\ ${expected_runs}\ configurations?\ \(${expected_runs}\ runs?\)\;\ bias\ [-+][0-9]+\.[0-9]%$ ]] \
  || fail "last line: '$last'"
if [ -n "$python" ] && [ "$expected_runs" = 5 ]; then
  grep -q '^MAPE epoch_s (pytorch, 2 ranks): ' "$work/validation/stdout.txt" \
    || fail "no pytorch MAPE line: $(cat "$work/validation/stdout.txt")"
fi
echo "e2e: profile, $expected_runs runs and the comparison report produced; $last"
