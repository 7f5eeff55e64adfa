#!/usr/bin/env bash
# scripts/validate.sh across nodes (--nodes, Slurm): the plan a dry run prints for 2 GPU nodes (the
# srun and torchrun command lines, the config's topology), the refusals, and real runs on 2 "nodes"
# of this machine under a stand-in srun (tests/fake_slurm): a C++ trainer rank per node, rendezvous
# over TCP at the first host, one row in runs.csv per run.
# Usage: validate_nodes.sh BIN_DIR
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/trainsim-nodes-XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export MEASURE=$bin/measure SIMULATE=$bin/simulate
cd "$root"
unset SLURM_JOB_ID SLURM_PROCID SLURM_JOB_NODELIST

# 1. The plan for 2 nodes x 4 GPUs, outside any allocation: printed, nothing written.
echo "8 16" > "$work/all_reduce_perf.log"
scripts/validate.sh --device cuda --gpus 4 --nodes 2 --topology '{preset: dgx-h100}' --trainers "pytorch trainsim" \
  --repeats 1 --batches 32 --nccl-tests-log "$work/all_reduce_perf.log" --out "$work/dry" --dry-run 2> "$work/dry.txt" \
  || { cat "$work/dry.txt" >&2; fail "the dry run exited non-zero"; }
[ ! -e "$work/dry" ] || fail "the dry run wrote $work/dry"
expect() { grep -qF -- "$1" "$work/dry.txt" || { cat "$work/dry.txt" >&2; fail "the dry run lacks: $1"; }; }
expect "dry run: srun --nodes 1 --ntasks 1 --nodelist node1 env -u SLURM_PROCID $MEASURE --resume --device cuda --ranks 4 "
expect "dry run: run (round 1): srun --nodes 1 --ntasks 1 --nodelist node1 env -u SLURM_PROCID $MEASURE train --strategy dp --gpus 4 "
expect "dry run: run (round 1): srun --nodes 2 --nodelist node1,node2 --kill-on-bad-exit=1 --ntasks-per-node 4 env MASTER_ADDR=node1 MASTER_PORT=29500 $MEASURE train --strategy ddp --gpus 8 --batch-per-gpu 32 "
expect "--ntasks-per-node 1 "
expect " -m torch.distributed.run --redirects 1 --tee 1 --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint node1:29500 "
expect "  topology: {preset: dgx-h100, nodes: 2, gpus_per_node: 4}"
expect "  collectives_log: nccl-tests-all_reduce.log"
expect "  gpus: [1, 2, 4, 8]"
# DataParallel and the textbook script stay on one node: no run of 8 GPUs but DDP's.
[ "$(grep -c -- '--gpus 8 \|--nnodes 2' "$work/dry.txt")" -eq 2 ] || fail "runs of 8 GPUs other than DDP's two"

# 2. Refusals: one line each, exit 2.
refuses() {
  local why=$1; shift
  set +e
  scripts/validate.sh "$@" > "$work/out.txt" 2> "$work/err.txt"
  local status=$?
  set -e
  [ "$status" -eq 2 ] && [ "$(wc -l < "$work/err.txt")" -eq 1 ] && grep -qF -- "$why" "$work/err.txt" \
    || fail "validate.sh $* should refuse with '$why' (exit $status): $(cat "$work/err.txt")"
}
refuses "needs a Slurm allocation of 2 nodes" --device cpu --nodes 2 --out "$work/x"
refuses "--topology MAP names the cluster" --device cuda --gpus 4 --nodes 2 --dry-run --out "$work/x"
refuses "leave out nodes and gpus_per_node" --device cuda --gpus 4 --nodes 2 --dry-run --topology '{preset: dgx-h100, nodes: 4}'
refuses "must be whole nodes" --device cpu --gpus 2 --nodes 2 --gpu-counts "1 3" --dry-run --out "$work/x"
refuses "is more than --gpus 2" --device cpu --gpus 2 --gpu-counts "4" --dry-run --out "$work/x"
refuses "give --topology too" --device cpu --nccl-tests-log "$work/all_reduce_perf.log" --dry-run --out "$work/x"

# 3. Real runs on two "nodes" of this machine: srun and scontrol stand-ins, 1 rank a node.
"$bin/measure" make-data --out "$work/data" --train-samples 512 --test-samples 8 > /dev/null
PATH=$root/tests/fake_slurm:$PATH SLURM_JOB_ID=1 SLURM_JOB_NODELIST=localhost,127.0.0.1 \
  MASTER_PORT=$((20000 + RANDOM % 20000)) \
  scripts/validate.sh --device cpu --nodes 2 --gpus 1 --trainers trainsim --batches 4 --samples 32 --epochs 2 \
  --repeats 1 --threads 1 --no-probe --data "$work/data" --out "$work/out" runs > "$work/runs.txt" 2>&1 \
  || { cat "$work/runs.txt" >&2; fail "validate.sh --nodes 2 runs exited non-zero"; }
runs=$work/out/runs.csv
[ "$(wc -l < "$runs")" -eq 3 ] || fail "runs.csv should have a header and 2 rows: $(cat "$runs")"
[ "$(awk -F, 'NR > 1 { print $2 }' "$runs" | paste -sd' ')" = "1 2" ] || fail "the runs' ranks: $(cat "$runs")"
grep -q '^\$ srun --nodes 2 --nodelist localhost,127.0.0.1 --kill-on-bad-exit=1 --ntasks-per-node 1 env MASTER_ADDR=localhost ' \
  "$work/out/logs/run-1-trainsim-ddp-2x4-w0.log" || fail "the 2-node run's log: $(cat "$work/out/logs/run-1-trainsim-ddp-2x4-w0.log")"
grep -q "rendezvous\|appended to $runs" "$work/out/logs/run-1-trainsim-ddp-2x4-w0.log" || fail "the 2-node run did not append its row"
echo "validate --nodes: the plan, 6 refusals and 2 runs across 2 stand-in nodes"
