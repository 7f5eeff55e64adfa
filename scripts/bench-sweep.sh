#!/usr/bin/env bash
# How the whole `simulate` command scales with the sweep's size: for each size N it writes a
# config of dp and ddp x 1, 2 and 4 ranks x N/6 batch sizes (1, 2, 3, ...) on the bundled CPU
# profile, runs `simulate CONFIG` (every table printed, to /dev/null) and prints the
# configurations, the wall time and the peak memory. The figures are this machine's at this
# moment: compare sizes, or two builds, within one run (docs/RELIABILITY.md "Scale").
#   scripts/bench-sweep.sh [N...]     (default: 30 10000 30000 100000)
# Environment: SIMULATE (build/bin/simulate), THREADS (simulate --threads; default: one per core).
set -euo pipefail
cd "$(dirname "$0")/.."
simulate=${SIMULATE:-build/bin/simulate}
threads=${THREADS:-$(nproc)}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(30 10000 30000 100000)
[ -x "$simulate" ] || { echo "error: $simulate: not built (scripts/setup.sh)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is missing (Debian: time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf "%14s %8s %10s %10s\n" configurations threads wall_s peak_MiB
for n in "${sizes[@]}"; do
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [ "$n" -lt 6 ]; then
    echo "error: size '$n': expected a whole number >= 6" >&2
    exit 2
  fi
  batches=$(( (n + 5) / 6 ))
  config="$work/sweep-$n.yaml"
  {
    echo "profile: $PWD/reports/cpu-epyc-2c/profile.yaml"
    echo "model: resnet18-cifar"
    echo "dataset: {train_samples: 50000}"
    echo "loader: {workers: 2}"
    echo "sweep: {strategy: [dp, ddp], gpus: [1, 2, 4], batch_per_gpu: [$(seq -s, 1 "$batches")]}"
  } > "$config"
  /usr/bin/time -f "%e %M" -o "$work/time" "$simulate" "$config" --threads "$threads" > /dev/null 2> "$work/err" || {
    cat "$work/err" >&2
    exit 1
  }
  read -r wall kib < "$work/time"
  printf "%14d %8s %10s %10d\n" $((batches * 6)) "$threads" "$wall" $((kib / 1024))
done
