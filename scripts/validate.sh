#!/usr/bin/env bash
# Checks trainsim on this node in one command (docs/VALIDATION.md, "Your own node"): profiles the
# node with collectives on up to N ranks, makes a grid of real training runs (the PyTorch reference
# trainer's DDP and DataParallel, the C++ trainer; 1..N GPUs, a few batches, repeats interleaved),
# and compares every run with the simulator's prediction, all into one folder with a README.
#
# Usage: scripts/validate.sh [OPTIONS] [STEP...]
#        sbatch --nodes K scripts/slurm-validate.sh [OPTIONS]    # several nodes (Slurm)
#   STEP: data, profile, runs, compare (default all four, in that order). Every step resumes: the
#   profile continues case by case (measure --resume) and the runs skip every run already made
#   (DIR/runs.keys), so after a kill the same command goes on where it stopped.
# Options:
#   --device cpu|cuda    default cuda when nvidia-smi lists a GPU, else cpu
#   --gpus N             GPUs (cuda) or Gloo ranks (cpu) of one node: of the largest one-node runs
#                        and of the profile's collectives (default: the visible GPUs, at most 8;
#                        cpu 2)
#   --nodes K            several nodes, inside a Slurm allocation of K nodes (default 1: this node,
#                        no Slurm needed). Runs on more than one node take whole nodes (GPU counts
#                        that are multiples of --gpus) and start by srun: the C++ trainer one task a
#                        GPU, the PyTorch trainer one torchrun a node (c10d rendezvous on the first
#                        node); DataParallel and the textbook script stay on one node; the profile
#                        and the one-node runs go to the first node. The folder and --data must be
#                        on a filesystem every node sees
#   --topology MAP       the cluster the predictions span nodes on, a YAML flow map without nodes
#                        and gpus_per_node (set from --nodes and --gpus), e.g. "{preset: dgx-h100}"
#                        or "{gpu: h100-sxm, fabric: nvswitch, nic: {gbps: 400, per: gpu}}"
#                        (docs/SCALE.md); required with --nodes on cuda
#   --nccl-tests-log F   the cluster's own all_reduce_perf log over all its GPUs: copied into the
#                        folder and named by the config (collectives_log: calibrates NCCL's model)
#   --dry-run            print what each step would run (and the config) and stop; nothing is
#                        written
#   --out DIR            the results folder (default reports/<machine>/validate-<N>-gpus, or
#                        -ranks on cpu; <machine> as `measure machine` names this host)
#   --gpu-counts "A B"   GPU (rank) counts of the runs (default 1 2 4 8 up to N, and N; with
#                        --nodes K also N x 2, 4, 8 ... nodes up to K, and N x K)
#   --batches "B ..."    per-GPU batches of the runs (default cuda "32 128 512", cpu "16 64")
#   --workers "W ..."    loader workers of the runs (default cuda 2, cpu 0)
#   --strategies "S .."  ddp, dp (default cuda "ddp dp", cpu "ddp"); dp runs on 2 GPUs or more
#   --trainers "T ..."   pytorch (measure/pytorch/train.py), trainsim (measure train), plain (a
#                        textbook DDP script, scripts/validation/plain_ddp.py: cpu, ddp only; its
#                        rows go to DIR/plain-ddp-runs.csv) (default "pytorch trainsim")
#   --repeats R          rounds: each runs every configuration once (default 3)
#   --epochs E           epochs per run, the last one timed (default 2)
#   --samples N          training images per epoch (default: the data set on cuda, 512 on cpu)
#   --threads T          intra-op threads per rank (cpu default 1: one core per rank)
#   --data DIR           CIFAR-10 binary files (default build/validation-data: synthetic images
#                        made by measure make-data, labelled synthetic everywhere)
#   --profile-batches L  the profile's batches, comma-separated (default: the runs' batches)
#   --measure-flags "F"  more flags for the profile, e.g. "--warmup 1 --repeats 3"
#   --precision P        fp32 (default) or bf16-amp: the profile and every run in it, the config's
#                        precision: too (docs/PRECISION.md); not with the textbook script (plain)
#   --memory-format M    nchw (default) or channels_last: the profile and every run in it, the
#                        config's memory_format: too (docs/PRECISION.md); not with the textbook
#                        script (plain)
#   --config FILE        the comparison's simulator config (default DIR/config.yaml, written here
#                        from the grid)
#   --no-probe           runs skip the calibration probe (faster; no drift adjustment)
#   --run-timeout S      a run still going after S seconds is killed and logged (default 1800)
#   --deadline S         start no round of runs that cannot end within S seconds of this call's
#                        start, judged by the last whole round's duration; the profile is cut at
#                        the deadline (it resumes); a round once started always finishes
# Environment: MEASURE (default build/bin/measure), SIMULATE (build/bin/simulate), PYTHON (the
# Python with torch and torchvision; default /usr/bin/python3 when it has them, else python3),
# MASTER_PORT (the rendezvous port of runs across nodes, default 29500), SRUN_FLAGS (more flags
# for every srun with --nodes, e.g. "--gres=gpu:8" where a step gets only the GPUs it asks for).
# Build first: scripts/setup.sh (or scripts/gpu-measure.sh build on a GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."
invocation="scripts/validate.sh$(printf ' %q' "$@")"
start=$(date +%s)

measure=${MEASURE:-build/bin/measure}
simulate=${SIMULATE:-build/bin/simulate}
device= gpus= dir= gpu_counts= batches= workers_list= strategies= trainers="pytorch trainsim"
repeats=3 epochs=2 samples= threads= data=build/validation-data profile_batches= measure_flags= precision=fp32 memory_format=nchw
config= probe_flag= run_timeout=1800 deadline= nodes=1 topology= nccl_log= dry_run=
steps=()

die() { echo "validate: error: $*" >&2; exit 2; }
needs() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }
whole() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] || die "$1 $2: expected a whole number >= $3"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --device) needs "$@"; device=$2; shift 2 ;;
    --gpus) needs "$@"; whole --gpus "$2" 1; gpus=$2; shift 2 ;;
    --nodes) needs "$@"; whole --nodes "$2" 1; nodes=$2; shift 2 ;;
    --topology) needs "$@"; topology=$2; shift 2 ;;
    --nccl-tests-log) needs "$@"; nccl_log=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --out) needs "$@"; dir=$2; shift 2 ;;
    --gpu-counts) needs "$@"; gpu_counts=$2; shift 2 ;;
    --batches) needs "$@"; batches=$2; shift 2 ;;
    --workers) needs "$@"; workers_list=$2; shift 2 ;;
    --strategies) needs "$@"; strategies=$2; shift 2 ;;
    --trainers) needs "$@"; trainers=$2; shift 2 ;;
    --repeats) needs "$@"; whole --repeats "$2" 1; repeats=$2; shift 2 ;;
    --epochs) needs "$@"; whole --epochs "$2" 1; epochs=$2; shift 2 ;;
    --samples) needs "$@"; whole --samples "$2" 1; samples=$2; shift 2 ;;
    --threads) needs "$@"; whole --threads "$2" 1; threads=$2; shift 2 ;;
    --data) needs "$@"; data=$2; shift 2 ;;
    --profile-batches) needs "$@"; profile_batches=$2; shift 2 ;;
    --measure-flags) needs "$@"; measure_flags=$2; shift 2 ;;
    --precision) needs "$@"; precision=$2; shift 2 ;;
    --memory-format) needs "$@"; memory_format=$2; shift 2 ;;
    --config) needs "$@"; config=$2; shift 2 ;;
    --no-probe) probe_flag=--no-probe; shift ;;
    --run-timeout) needs "$@"; whole --run-timeout "$2" 1; run_timeout=$2; shift 2 ;;
    --deadline) needs "$@"; whole --deadline "$2" 1; deadline=$((start + $2)); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    data|profile|runs|compare) steps+=("$1"); shift ;;
    *) die "unknown option or step '$1' (see --help)" ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(data profile runs compare)
[ -x "$measure" ] || die "$measure: not built (scripts/setup.sh)"

if [ -z "$device" ]; then
  if command -v nvidia-smi > /dev/null && nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then device=cuda; else device=cpu; fi
fi
[[ $device == cpu || $device == cuda ]] || die "--device $device: expected cpu or cuda"
if [ -z "$gpus" ]; then
  if [ "$device" = cuda ]; then
    gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
    [ "$gpus" -ge 1 ] || die "--device cuda: nvidia-smi lists no GPU"
    [ "$gpus" -le 8 ] || gpus=8
  else
    gpus=2
  fi
fi
# Several nodes: the allocation's hosts, the first one the rendezvous of every run across nodes.
hosts=()
if [ "$nodes" -gt 1 ]; then
  if [ -n "${SLURM_JOB_ID:-}" ]; then
    command -v srun > /dev/null || die "--nodes $nodes: srun is not on PATH"
    mapfile -t hosts < <(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2> /dev/null)
    [ "${#hosts[@]}" -ge "$nodes" ] || die "--nodes $nodes: the allocation has ${#hosts[@]} node(s) (SLURM_JOB_NODELIST '${SLURM_JOB_NODELIST:-}')"
  elif [ -n "$dry_run" ]; then
    for k in $(seq "$nodes"); do hosts+=("node$k"); done  # a preview outside the allocation
  else
    die "--nodes $nodes: needs a Slurm allocation of $nodes nodes (sbatch --nodes $nodes scripts/slurm-validate.sh, or salloc --nodes $nodes)"
  fi
  [ "$device" = cuda ] && [ -z "$topology" ] &&
    die "--nodes $nodes on cuda: --topology MAP names the cluster the predictions span nodes on, e.g. '{preset: dgx-h100}' (docs/SCALE.md)"
fi
if [ -n "$topology" ]; then
  [[ $topology =~ ^\{.*\}$ ]] || die "--topology '$topology': expected a YAML flow map, {...}"
  [[ $topology =~ (^|[{,[:space:]])(nodes|gpus_per_node)[[:space:]]*: ]] &&
    die "--topology '$topology': leave out nodes and gpus_per_node (--nodes and --gpus set them)"
fi
if [ -n "$nccl_log" ]; then
  [ -f "$nccl_log" ] || die "--nccl-tests-log $nccl_log: no such file"
  [ -n "$topology" ] || die "--nccl-tests-log: the log calibrates a topology's collectives; give --topology too"
fi
if [ -z "$gpu_counts" ]; then
  for g in 1 2 4 8; do [ "$g" -lt "$gpus" ] && gpu_counts+="$g "; done
  gpu_counts+=$gpus
  for ((k = 2; k < nodes; k *= 2)); do gpu_counts+=" $((k * gpus))"; done
  [ "$nodes" -gt 1 ] && gpu_counts+=" $((nodes * gpus))"
fi
for g in $gpu_counts; do
  whole --gpu-counts "$g" 1
  if [ "$g" -gt "$gpus" ]; then
    [ "$nodes" -gt 1 ] || die "--gpu-counts: $g is more than --gpus $gpus"
    [ $((g % gpus)) -eq 0 ] && [ $((g / gpus)) -le "$nodes" ] ||
      die "--gpu-counts: $g spans nodes, so it must be whole nodes: a multiple of --gpus $gpus, at most $((nodes * gpus))"
  fi
done
if [ "$device" = cuda ]; then
  batches=${batches:-32 128 512}; workers_list=${workers_list:-2}; strategies=${strategies:-ddp dp}
else
  batches=${batches:-16 64}; workers_list=${workers_list:-0}; strategies=${strategies:-ddp}
  samples=${samples:-512}; threads=${threads:-1}
fi
for b in $batches; do whole --batches "$b" 1; done
for w in $workers_list; do whole --workers "$w" 0; done
for s in $strategies; do [[ $s == ddp || $s == dp ]] || die "--strategies: '$s' is not ddp or dp"; done
for t in $trainers; do
  [[ $t == pytorch || $t == trainsim || $t == plain ]] || die "--trainers: '$t' is not pytorch, trainsim or plain"
done
[[ " $trainers " == *" plain "* && $device == cuda ]] && die "--trainers plain: the textbook script runs on cpu only"
[[ $precision == fp32 || $precision == bf16-amp ]] || die "--precision $precision: expected fp32 or bf16-amp"
[[ $precision == fp32 || " $trainers " != *" plain "* ]] ||
  die "--precision $precision: the textbook script (plain) runs fp32 only"
[[ $memory_format == nchw || $memory_format == channels_last ]] ||
  die "--memory-format $memory_format: expected nchw or channels_last"
[[ $memory_format == nchw || " $trainers " != *" plain "* ]] ||
  die "--memory-format $memory_format: the textbook script (plain) runs nchw only"
profile_batches=${profile_batches:-$(echo $batches | tr ' ' ',')}
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  /usr/bin/python3 -c 'import torch, torchvision' 2> /dev/null && PYTHON=/usr/bin/python3
fi
python=$PYTHON
pytorch_flag=$python
if ! "$python" -c 'import torch, torchvision' 2> /dev/null; then
  [[ " $trainers " == *" pytorch "* || " $trainers " == *" plain "* ]] &&
    die "$python has no torch and torchvision: set PYTHON, or --trainers trainsim"
  pytorch_flag=off  # the profile's PyTorch section needs them too
fi
if [ -z "$dir" ]; then
  machine=$("$measure" machine --device "$device") || die "measure machine --device $device failed"
  dir=reports/$machine/validate-$([ "$nodes" -gt 1 ] && echo "${nodes}x")$gpus-$([ "$device" = cuda ] && echo gpus || echo ranks)
fi
if [ -n "$dry_run" ]; then
  dir=$(realpath -m "$dir")
  log=/dev/null
else
  mkdir -p "$dir/logs"
  dir=$(cd "$dir" && pwd)
  log=$dir/validation.log
fi
config=${config:-$dir/config.yaml}
say() { echo "validate: $*" | tee -a "$log" >&2; }
# A step's command in dry-run mode: printed, not run.
dry() { say "dry run: $*"; }
# The profile and the one-node runs: across nodes, one task on the first node. They start their
# own ranks, so Slurm's task variables (of that task, or of a batch job around this script) are
# dropped: measure train would take them for its launcher's.
# shellcheck disable=SC2206  # the user's flags, split as a shell would
srun_cmd=(srun ${SRUN_FLAGS:-})
one_node=()
[ "$nodes" -gt 1 ] && one_node=("${srun_cmd[@]}" --nodes 1 --ntasks 1 --nodelist "${hosts[0]}")
[ "$nodes" -gt 1 ] || [ -n "${SLURM_PROCID:-}" ] && one_node+=(env -u SLURM_PROCID)
port=${MASTER_PORT:-29500}
load() { cut -d' ' -f1 /proc/loadavg; }
time_left() { if [ -n "$deadline" ]; then echo $((deadline - $(date +%s))); else echo 1000000000; fi; }
# The environment that changes what is timed (glibc's allocator: docs/VALIDATION.md), recorded in
# front of the call as a shell would take it, so that the README's list of calls reproduces it.
timing_env=
while IFS='=' read -r name value; do
  timing_env+="$name=$(printf '%q' "$value") "
done < <(env | grep -E '^(GLIBC_TUNABLES|MALLOC_[A-Z_]+_)=' | sort)
say "$(date -u +%Y-%m-%dT%H:%M:%SZ): $timing_env$invocation"
say "$device, $([ "$nodes" -gt 1 ] && echo "$nodes nodes x ")$gpus $([ "$device" = cuda ] && echo GPUs || echo ranks), steps: ${steps[*]}; results in $dir"

has_step() { [[ " ${steps[*]} " == *" $1 "* ]]; }

if has_step data && [ ! -f "$data/SYNTHETIC" ] && ! compgen -G "$data/data_batch_1.bin" > /dev/null; then
  make_data=("$measure" make-data --out "$data" --train-samples 50000 --test-samples 10000)
  if [ -n "$dry_run" ]; then
    dry "${make_data[*]}"
  else
    say "data: synthetic CIFAR-format images into $data"
    "${make_data[@]}" | tee -a "$log"
  fi
fi

if has_step profile; then
  ranks=()
  [ "$device" = cuda ] || [ "$gpus" -ge 2 ] && ranks=(--ranks "$gpus")
  profile_cmd=("${one_node[@]}" "$measure" --resume --device "$device" "${ranks[@]}" --batches "$profile_batches"
               --data "$data" --pytorch "$pytorch_flag" --out "$dir/profile.yaml")
  [ -n "$threads" ] && profile_cmd+=(--threads "$threads")
  [ "$precision" = fp32 ] || profile_cmd+=(--precision "$precision")
  [ "$memory_format" = nchw ] || profile_cmd+=(--memory-format "$memory_format")
  # shellcheck disable=SC2206  # the user's flags, split as a shell would
  profile_cmd+=($measure_flags)
  [ -z "$dry_run" ] || dry "${profile_cmd[*]}"
fi
if has_step profile && [ -z "$dry_run" ]; then
  left=$(time_left)
  [ "$left" -gt 30 ] || { say "deadline: the profile is not started"; exit 0; }
  say "profile: ${profile_cmd[*]} (load $(load))"
  set +e
  timeout --kill-after=30 "$left" "${profile_cmd[@]}" 2>&1 | tee -a "$log" "$dir/logs/profile.log"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then say "deadline: the profile was cut (run again to resume)"; exit 0; fi
  [ "$status" -eq 0 ] || { say "profile: measure exited $status (logs/profile.log)"; exit "$status"; }
fi

# The command of one run, into the array `cmd`; empty when the trainer does not run it.
run_command() {
  local trainer=$1 strategy=$2 g=$3 b=$4 w=$5
  cmd=()
  [ "$strategy" = dp ] && [ "$g" -lt 2 ] && return  # one device: DataParallel is the plain model
  local n=$(( (g + gpus - 1) / gpus ))  # nodes
  [ "$n" -gt 1 ] && { [ "$strategy" = ddp ] && [ "$trainer" != plain ] || return 0; }  # one process: one node
  local common=(--batch-per-gpu "$b" --workers "$w" --epochs "$epochs" --device "$device" --data "$data"
                --runs "$dir/runs.csv" --quiet)
  [ -n "$samples" ] && common+=(--train-samples "$samples")
  [ -n "$threads" ] && common+=(--threads "$threads")
  [ -n "$probe_flag" ] && common+=("$probe_flag")
  [ "$precision" = fp32 ] || common+=(--precision "$precision")
  [ "$memory_format" = nchw ] || common+=(--memory-format "$memory_format")
  # torchrun (--redirects 1 --tee 1 for Debian's torchrun 1.13 on Python 3.11): --standalone on one
  # node; across n nodes one agent a node, the rendezvous (c10d) on the first.
  local torchrun=("$python" -m torch.distributed.run --redirects 1 --tee 1)
  if [ "$n" -gt 1 ]; then
    torchrun+=(--nnodes "$n" --nproc_per_node "$gpus" --rdzv_backend c10d --rdzv_endpoint "${hosts[0]}:$port"
               --rdzv_id "trainsim-validate-${SLURM_JOB_ID:-0}")
  else
    torchrun+=(--standalone --nproc_per_node "$g")
  fi
  case $trainer in
    trainsim) cmd=("$measure" train --strategy "$strategy" --gpus "$g" "${common[@]}") ;;
    pytorch)
      if [ "$strategy" = dp ]; then
        cmd=("$python" measure/pytorch/train.py --strategy dp --gpus "$g" "${common[@]}")
      elif [ "$g" -eq 1 ]; then
        cmd=("$python" measure/pytorch/train.py --strategy ddp "${common[@]}")
      else
        cmd=("${torchrun[@]}" measure/pytorch/train.py --strategy ddp "${common[@]}")
      fi ;;
    plain)
      [ "$strategy" = ddp ] || return 0
      cmd=("${torchrun[@]}" scripts/validation/plain_ddp.py --data "$data" --batch "$b" --workers "$w"
           --samples "${samples:-50000}" --epochs "$epochs" --threads "${threads:-1}") ;;
  esac
  if [ "$n" -gt 1 ]; then
    # srun on the first n nodes: the C++ trainer as one task a GPU (its rank from Slurm's
    # variables, the rendezvous at MASTER_ADDR), the PyTorch trainer as one torchrun a node.
    local on=("${srun_cmd[@]}" --nodes "$n" --nodelist "$(IFS=,; echo "${hosts[*]:0:n}")" --kill-on-bad-exit=1)
    case $trainer in
      trainsim) cmd=("${on[@]}" --ntasks-per-node "$gpus" env MASTER_ADDR="${hosts[0]}" MASTER_PORT="$port" "${cmd[@]}") ;;
      pytorch) cmd=("${on[@]}" --ntasks-per-node 1 "${cmd[@]}") ;;
    esac
  else
    cmd=("${one_node[@]}" "${cmd[@]}")
  fi
}

# Runs `cmd` with its command line and all its output in `logfile`; returns its exit status.
# The textbook script reports on stdout; its row is made by plain_ddp_row.py, with the
# calibration probe timed right before it (as the reference trainer times one before its run).
run_logged() {
  local trainer=$1 logfile=$2 status
  echo "\$ ${cmd[*]}" > "$logfile"
  if [ "$trainer" = plain ]; then
    local row=("$python" scripts/validation/plain_ddp_row.py "$dir/plain-ddp-runs.csv")
    if [ -z "$probe_flag" ]; then
      row+=(--probe-s "$("$python" measure/pytorch/probe.py --device cpu --threads "${threads:-1}" | cut -d' ' -f2)")
    fi
    set +e
    timeout --kill-after=30 "$run_timeout" "${cmd[@]}" 2>> "$logfile" | tee -a "$logfile" | "${row[@]}" >> "$logfile" 2>&1
    status=$(( PIPESTATUS[0] != 0 ? PIPESTATUS[0] : PIPESTATUS[2] ))
    set -e
  else
    set +e
    timeout --kill-after=30 "$run_timeout" "${cmd[@]}" >> "$logfile" 2>&1
    status=$?
    set -e
  fi
  echo "# exit $status" >> "$logfile"
  return "$status"
}

if has_step runs; then
  # Every configuration once per round, trainers alternating, so that a slow spell of the machine
  # spreads over all configurations instead of biasing one. A run that ends, well or not, is listed
  # in runs.keys (a failed one is not retried: its log says why); one cut short by a kill is not.
  # The runs in order, one key "ROUND TRAINER STRATEGY GPUS BATCH WORKERS" each.
  plan=()
  for round in $(seq "$repeats"); do for g in $gpu_counts; do for w in $workers_list; do for b in $batches; do
    for s in $strategies; do for t in $trainers; do
      run_command "$t" "$s" "$g" "$b" "$w"
      [ ${#cmd[@]} -gt 0 ] && plan+=("$round $t $s $g $b $w")
    done; done; done; done; done
  done
  total=${#plan[@]}
  if [ -n "$dry_run" ]; then
    for key in "${plan[@]}"; do
      read -r round t s g b w <<< "$key"
      run_command "$t" "$s" "$g" "$b" "$w"
      dry "run (round $round): ${cmd[*]}"
    done
  fi
fi
if has_step runs && [ -z "$dry_run" ]; then
  keys=$dir/runs.keys
  touch "$keys"
  todo=0
  [ "$total" -eq 0 ] || todo=$(printf '%s\n' "${plan[@]}" | grep -vxcF -f "$keys" || true)
  say "runs: $total in $repeats rounds, $((total - todo)) made before, $todo to make"
  n=0 made=0 failed=0 last_round_s= runs_start=$(date +%s) round_now= round_start=
  for key in "${plan[@]}"; do
    n=$((n + 1))
    grep -qxF "$key" "$keys" && continue
    read -r round t s g b w <<< "$key"
    if [ "$round" != "$round_now" ]; then  # the first run this call makes in a round
      [ -n "$round_now" ] && last_round_s=$(( $(date +%s) - round_start ))
      if [ -n "$deadline" ] && [ -n "$last_round_s" ] && [ "$(time_left)" -lt "$last_round_s" ]; then
        left=$(time_left)
        say "deadline: round $round not started (the last round took ${last_round_s}s, $([ "$left" -gt 0 ] && echo "${left}s left" || echo "the deadline has passed")); run again to go on"
        break
      fi
      round_now=$round round_start=$(date +%s)
    fi
    run_command "$t" "$s" "$g" "$b" "$w"
    elapsed=$(( $(date +%s) - runs_start ))
    eta=
    [ "$made" -gt 0 ] && eta=", about $(( (elapsed * (todo - made) / made + 30) / 60 )) min left"
    say "run $n/$total (round $round): $t $s $g x batch $b, $w workers (load $(load), ${elapsed}s elapsed$eta)"
    logfile=$dir/logs/run-$round-$t-$s-${g}x$b-w$w.log
    if ! run_logged "$t" "$logfile"; then
      failed=$((failed + 1))
      say "run $n FAILED: $key: $(grep -v '^#' "$logfile" | grep -m1 -i 'error' || tail -n 1 "$logfile") ($logfile)"
    fi
    echo "$key" >> "$keys"
    made=$((made + 1))
  done
  say "runs: $made made in this call, $failed failed; $((total - todo + made)) of $total done"
fi

# The sweep of the grid, for the comparison's tables, with the first trainer of --trainers (the
# textbook script is predicted as PyTorch); every measured run is predicted with its own trainer,
# GPUs, batch, workers and samples (simulate --compare).
write_config() {
  local list
  {
    echo "# Written by scripts/validate.sh: the grid of runs.csv, predicted from profile.yaml."
    echo "profile: profile.yaml"
    if [ -n "$topology" ]; then
      local keys=${topology#\{}
      keys=${keys%\}}
      echo "topology: {${keys:+$keys, }nodes: $nodes, gpus_per_node: $gpus}"
    fi
    [ -n "$nccl_log" ] && echo "collectives_log: nccl-tests-all_reduce.log  # the cluster's own, copied from $nccl_log"
    echo "model: resnet18-cifar"
    local first=${trainers%% *}
    echo "trainer: $([ "$first" = trainsim ] && echo trainsim || echo pytorch)  # the tables' trainer"
    [ "$precision" = fp32 ] || echo "precision: $precision"
    [ "$memory_format" = nchw ] || echo "memory_format: $memory_format"
    [ -n "$samples" ] && echo "dataset: {train_samples: $samples}"
    echo "loader: {workers: ${workers_list%% *}}"
    echo "sweep:"
    list() { echo "$*" | sed -E 's/ +/, /g'; }
    echo "  strategy: [$(list $strategies)]"
    echo "  gpus: [$(list $gpu_counts)]"
    echo "  batch_per_gpu: [$(list $batches)]"
  }
}

# The folder's README: what was run and what came out, from the files.
write_readme() {
  local runs=$dir/runs.csv
  {
    local machine
    machine=$(sed -n -E 's/^  name: "?([^"]*)"?$/\1/p' "$dir/profile.yaml" | head -n 1)
    echo "# Predicted vs measured: $machine, $device, up to $([ "$nodes" -gt 1 ] && echo "$nodes nodes x ")$gpus $([ "$device" = cuda ] && echo GPUs || echo ranks)"
    echo
    echo "Made by \`scripts/validate.sh\` ($(git rev-parse --short HEAD 2> /dev/null || echo 'no git'), last step $(date -u +%Y-%m-%dT%H:%M:%SZ)); the calls, in order:"
    echo
    grep -E '^validate: [0-9]{4}-' "$log" | sed -E 's/^validate: ([^ ]*): (.*)$/- \1: `\2`/'
    echo
    echo "- \`profile.yaml\`: the profile (\`collectives.txt\` its collectives as nccl-tests tables);"
    echo "  \`logs/profile.log\` what measure printed."
    if [ -f "$runs" ]; then
      echo "- \`runs.csv\`: $(( $(wc -l < "$runs") - 1 )) measured runs:" \
        "$(awk -F, 'NR > 1 { n[$18 " " $1 " on " $2]++ } END { for (k in n) print k ": " n[k] }' "$runs" | sort | paste -sd ';' | sed 's/;/; /g')."
    fi
    [ -f "$dir/plain-ddp-runs.csv" ] && echo "- \`plain-ddp-runs.csv\`: $(( $(wc -l < "$dir/plain-ddp-runs.csv") - 1 )) runs of the textbook DDP script."
    echo "- \`logs/run-*.log\`: every run's command line, output and exit status" \
      "($(grep -l '^# exit [1-9]' "$dir"/logs/run-*.log 2> /dev/null | wc -l) failed)."
    echo "- \`validation/\`: \`simulate $(basename "$config") --compare runs.csv\` (report.md, comparison.csv, plots)."
    for out in validation validation-plain-ddp; do
      [ -f "$dir/$out/stdout.txt" ] || continue
      echo
      echo "## \`$out/\`: summary"
      echo
      echo '```'
      grep -E '^(MAPE|Measured but not predicted)' "$dir/$out/stdout.txt" || tail -n 3 "$dir/$out/stdout.txt"
      echo '```'
    done
    echo
    echo "A configuration run once has unknown noise: it is left out of the noise floor."
  } > "$dir/README.md"
}

if has_step compare && [ -n "$dry_run" ]; then
  if [ "$config" = "$dir/config.yaml" ]; then
    dry "$dir/config.yaml:"
    write_config | sed 's/^/  /' >&2
  fi
  dry "$simulate $config --compare $dir/runs.csv --out $dir/validation"
  exit 0
fi
if has_step compare; then
  [ -f "$dir/profile.yaml" ] || die "compare: no $dir/profile.yaml (run the profile step)"
  [ -z "$nccl_log" ] || cp "$nccl_log" "$dir/nccl-tests-all_reduce.log"
  [ "$config" = "$dir/config.yaml" ] && write_config > "$dir/config.yaml"
  for pair in "runs.csv validation" "plain-ddp-runs.csv validation-plain-ddp"; do
    set -- $pair
    [ -f "$dir/$1" ] || continue
    mkdir -p "$dir/$2"
    say "compare: simulate $config --compare $dir/$1 --out $dir/$2"
    "$simulate" "$config" --compare "$dir/$1" --out "$dir/$2" > "$dir/$2/stdout.txt"
    tail -n 1 "$dir/$2/stdout.txt" | tee -a "$log"
  done
  write_readme
  say "the folder's README: $dir/README.md"
fi
