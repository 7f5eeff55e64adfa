#!/usr/bin/env bash
# All GPU-machine work in a few commands (see docs/MEASURE.md, "GPU machine"):
#
#   scripts/gpu-measure.sh fetch-deps     on a development machine with apt: downloads the Debian
#                                         packages the GPU machine may lack (yaml-cpp, Boost
#                                         program_options, Eigen, GoogleTest) into .deps/debs
#   scripts/gpu-measure.sh build          configure against the PyTorch wheel's LibTorch (CUDA,
#                                         NCCL from the nvidia-nccl wheel) and build into build-gpu/
#   scripts/gpu-measure.sh check          the test suite and `measure --quick` on the GPU
#   scripts/gpu-measure.sh measure [-- FLAGS]   the full `measure` (continues an interrupted run)
#   scripts/gpu-measure.sh runs           real epochs, C++ (`measure train`) and PyTorch
#                                         (measure/pytorch/train.py), interleaved (resumable)
#   scripts/gpu-measure.sh all [-- FLAGS] build, check, measure
#   scripts/gpu-measure.sh session        everything not yet done, in order of value, until
#                                         --deadline: build, check, data, profile, runs, the
#                                         cuDNN-default profile; each step resumes where the last
#                                         call stopped; an empty results folder starts from what
#                                         reports/<this machine>/ holds
#
# Options (before the command): --results DIR (default out/gpu, git-ignored: kept between
# calls while the machine stays up, or carried back in), --copy-to DIR (copy the results folder
# there at the end), --deadline S (session: start no step or run that cannot end within S seconds
# of the start), --pack DIR (at the end: DIR/results.tgz with the results and the built programs,
# which a later call unpacks to skip the build; for a lent machine's $OUT).
# Everything each step prints goes to DIR/<step>.log too; the profile lands in
# DIR/profile.yaml with collectives.txt, the runs in DIR/runs.csv, the environment in
# DIR/environment.txt.
# Environment for runs: RUN_BATCHES (default "32 128 512 1024"), RUN_WORKERS ("2 0"),
# RUN_STRATEGIES ("ddp dp"), RUN_TRAINERS ("pytorch trainsim"), RUN_REPEATS (3), RUN_EPOCHS (2),
# PROFILE_BATCHES (32,128,512,1024,2048,8192), PYTHON (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

results=out/gpu
copy_to=
deadline=
pack=
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results=$2; shift 2 ;;
    --copy-to) copy_to=$2; shift 2 ;;
    --deadline) deadline=$(( $(date +%s) + $2 )); shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    *) break ;;
  esac
done
command=${1:-all}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
mkdir -p "$results"
results=$(cd "$results" && pwd)

build_dir=$repo/build-gpu
deps_debs=$repo/.deps/debs
deps_root=$repo/.deps/root
# Debian 12 packages: the -dev packages and the runtime libraries they link.
deps_packages=(libyaml-cpp-dev libyaml-cpp0.7 libboost-program-options-dev
               libboost-program-options1.74-dev libboost-program-options1.74.0 libboost1.74-dev
               libeigen3-dev libgtest-dev nlohmann-json3-dev zlib1g-dev)

say() { echo "gpu-measure: $*" >&2; }

python=${PYTHON:-python3}
run_batches=${RUN_BATCHES:-32 128 512 1024}
run_workers=${RUN_WORKERS:-2 0}
run_strategies=${RUN_STRATEGIES:-ddp dp}
run_trainers=${RUN_TRAINERS:-pytorch trainsim}
run_repeats=${RUN_REPEATS:-3}
run_epochs=${RUN_EPOCHS:-2}
profile_batches=${PROFILE_BATCHES:-32,128,512,1024,2048,8192}

# One hash of every source the programs are built from (the copy on a GPU machine may have no .git).
sources_hash() {
  (cd "$repo" && find CMakeLists.txt measure sim models -type f \( -name '*.cpp' -o -name '*.h' \
    -o -name '*.hpp' -o -name CMakeLists.txt \) | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -d' ' -f1)
}

# Seconds left before --deadline (a large number without one).
time_left() { if [ -n "$deadline" ]; then echo $(( deadline - $(date +%s) )); else echo 1000000; fi; }
# Runs a command under what is left of --deadline, less a margin for packing the results: a
# command cut short (measure resumes case by case) must not take the packing with it.
bounded() {
  local left=$(( $(time_left) - 25 ))
  if [ "$left" -lt 10 ]; then say "deadline: not starting $*"; return 124; fi
  timeout --kill-after=5 "$left" "$@"
}

finish() {
  if [ -n "$copy_to" ]; then
    mkdir -p "$copy_to"
    cp -r "$results"/. "$copy_to"/
  fi
  if [ -n "$pack" ]; then
    # The results (without the generated images) and the built programs, so that a later call
    # on a fresh machine can carry them back in and go on without rebuilding.
    mkdir -p "$results/bin"
    for program in measure; do
      [ -x "$build_dir/bin/$program" ] && cp "$build_dir/bin/$program" "$results/bin/"
    done
    sources_hash > "$results/bin/commit"
    mkdir -p "$pack"
    tar -czf "$pack/results.tgz" -C "$results" --exclude=./data .
    say "packed $(du -h "$pack/results.tgz" | cut -f1) into $pack/results.tgz"
  fi
}
trap finish EXIT

fetch_deps() {
  mkdir -p "$deps_debs"
  (cd "$deps_debs" && apt-get download "${deps_packages[@]}")
  say "downloaded into $deps_debs: $(find "$deps_debs" -name '*.deb' -printf '%f ')"
  say "they travel with the repository's ignored .deps/ folder (carry .deps/debs to the GPU machine)"
}

# Unpacks .deps/debs/*.deb into .deps/root (dpkg -x where dpkg exists, else ar + tar).
unpack_deps() {
  [ -d "$deps_root/usr" ] && return 0
  compgen -G "$deps_debs/*.deb" > /dev/null || {
    say "no Debian packages in $deps_debs: run 'scripts/gpu-measure.sh fetch-deps' on a development machine"
    return 1
  }
  mkdir -p "$deps_root"
  for deb in "$deps_debs"/*.deb; do
    if command -v dpkg > /dev/null; then
      dpkg -x "$deb" "$deps_root"
    else
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$deps_root")
      rm -rf "$tmp"
    fi
  done
  say "unpacked $(find "$deps_debs" -name '*.deb' | wc -l) packages into $deps_root"
}

environment() {
  {
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# git: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
    uname -a
    nvidia-smi || true
    nvcc --version || true
    "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())' || true
    cmake --version | head -1 || true
    ldd --version | head -1 || true
  } > "$results/environment.txt" 2>&1
}

configure() {
  local torch_prefix nccl_root prefix tests=ON
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl_root=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  prefix=$torch_prefix
  local nvcc_path
  nvcc_path=$(command -v nvcc || true)
  # Every source alone (no unity build): the CUDA-only code is compiled on this machine alone, and
  # its 16 cores gain little from unity batches.
  local args=(-S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_BENCHMARKS=OFF
              -DTRAINSIM_UNITY=OFF)
  [ -n "$nccl_root" ] && args+=(-DNCCL_ROOT="$nccl_root")
  [ -n "$nvcc_path" ] && args+=(-DCMAKE_CUDA_COMPILER="$nvcc_path" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc_path")")")
  if ! cmake "${args[@]}" -DCMAKE_PREFIX_PATH="$prefix"; then
    say "configure failed with the system packages; trying the unpacked Debian packages in .deps/"
    unpack_deps || return 1
    prefix="$torch_prefix;$deps_root/usr"
    export LD_LIBRARY_PATH="$deps_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ -f "$deps_root/usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake" ] || tests=OFF
    rm -f "$build_dir/CMakeCache.txt"
    cmake "${args[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DTRAINSIM_TESTS="$tests" \
      -DEigen3_DIR="$deps_root/usr/share/eigen3/cmake" || return 1
  fi
}

# The programs a packed earlier call built from the same sources, if any.
reuse_binaries() {
  local want
  want=$(sources_hash)
  [ -x "$results/bin/measure" ] && [ -f "$results/bin/commit" ] && [ "$(cat "$results/bin/commit")" = "$want" ] || return 1
  if compgen -G "$deps_debs/*.deb" > /dev/null; then unpack_deps; fi
  runtime_env
  mkdir -p "$build_dir/bin"
  cp "$results/bin/measure" "$build_dir/bin/" || return 1
  "$build_dir/bin/measure" --help > /dev/null 2>&1 || return 1
  say "reusing the programs built by an earlier call from these sources ($results/bin)"
}

build() {
  environment
  if [ ! -f "$build_dir/build.ninja" ] && reuse_binaries; then return 0; fi
  configure || return 1
  # -k 0: every compile error in one go (a GPU call is too dear to find them one at a time).
  # Only measure here; the check step builds the tests.
  cmake --build "$build_dir" -j "$(nproc)" --target measure -- -k 0 || return 1
  say "built $build_dir/bin/measure"
}

# The unpacked Debian libraries, if the build used them.
runtime_env() {
  if [ -d "$deps_root/usr/lib/x86_64-linux-gnu" ]; then
    export LD_LIBRARY_PATH="$deps_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

check() {
  runtime_env
  local status=0
  if [ -f "$build_dir/CTestTestfile.cmake" ]; then
    (cd "$build_dir" && ctest --output-on-failure -j "$(nproc)") || status=$?
  fi
  mkdir -p "$results/quick"
  (cd "$results/quick" && "$build_dir/bin/measure" --quick --out profile.yaml) || status=$?
  return $status
}

measure() {
  runtime_env
  (cd "$results" && "$build_dir/bin/measure" --resume "$@")
  say "profile: $(ls "$results"/reports/*/profile.yaml)"
}

# Synthetic CIFAR-format images (50,000 + 10,000, marked SYNTHETIC), from measure make-data or,
# without a build, from the PyTorch side's generator (the same images).
data() {
  [ -f "$results/data/SYNTHETIC" ] && return 0
  runtime_env
  if [ -x "$build_dir/bin/measure" ]; then
    "$build_dir/bin/measure" make-data --out "$results/data" --train-samples 50000 --test-samples 10000
  else
    "$python" "$repo/measure/pytorch/synthetic.py" --out "$results/data"
  fi
}

# The GPU profile: every part, the batches the runs use and the sweep's, cudnn.benchmark on (as
# both trainers run). Resumes.
profile() {
  runtime_env
  bounded "$build_dir/bin/measure" --resume --device cuda --models resnet18-cifar --batches "$profile_batches" \
    --data "$results/data" --pytorch "$python" --out "$results/profile.yaml" ${PROFILE_FLAGS:-} "$@"
}

# The same compute with PyTorch's default cudnn.benchmark = False (compute only).
profile_cudnn_default() {
  runtime_env
  bounded "$build_dir/bin/measure" --resume --device cuda --models resnet18-cifar --batches "$profile_batches" \
    --cudnn-benchmark off --skip h2d,loader,collectives --pytorch off \
    --out "$results/cudnn-default/profile.yaml"
}

# One real run: one row appended to $results/runs.csv.
run_one() {
  local trainer=$1 strategy=$2 batch=$3 workers=$4
  local common=(--strategy "$strategy" --gpus 1 --batch-per-gpu "$batch" --workers "$workers"
                --epochs "$run_epochs" --device cuda --data "$results/data" --runs "$results/runs.csv" --quiet)
  if [[ $trainer == pytorch ]]; then
    bounded "$python" "$repo/measure/pytorch/train.py" "${common[@]}"
  else
    bounded "$build_dir/bin/measure" train "${common[@]}"
  fi
}

# Every configuration once per round, trainers alternating, so a slow spell spreads over all of
# them. A finished run is listed in runs.keys, so a later call goes on where this one stopped.
# Stops starting runs when less than 60 s are left before --deadline.
runs() {
  runtime_env
  local done_file=$results/runs.keys total=0 n=0 key
  touch "$done_file"
  for _ in $(seq "$run_repeats"); do for _ in $run_batches; do for _ in $run_workers; do
    for _ in $run_strategies; do for _ in $run_trainers; do total=$((total + 1)); done; done; done; done; done
  for round in $(seq "$run_repeats"); do
    for batch in $run_batches; do
      for workers in $run_workers; do
        for strategy in $run_strategies; do
          for trainer in $run_trainers; do
            n=$((n + 1))
            key="$round $trainer $strategy $batch $workers"
            grep -qxF "$key" "$done_file" && continue
            if [ "$(time_left)" -lt 60 ]; then say "runs: deadline, $n/$total next"; return 0; fi
            say "run $n/$total: round $round $trainer $strategy batch $batch workers $workers"
            if run_one "$trainer" "$strategy" "$batch" "$workers" > /dev/null; then
              echo "$key" >> "$done_file"
            else
              say "run $n FAILED: $key"
              echo "$key" >> "$done_file"  # not retried: the log says why
            fi
          done
        done
      done
    done
  done
  say "runs: all $total done"
}

# This machine's name as measure names it (measure/machine.cpp: the device name's slug, "-x", the
# GPU count), e.g. nvidia-h200-x1; empty without nvidia-smi. GPU_MACHINE overrides it.
gpu_machine() {
  if [ -n "${GPU_MACHINE:-}" ]; then echo "$GPU_MACHINE"; return; fi
  command -v nvidia-smi > /dev/null || return 0
  local names
  names=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null) || return 0
  [ -n "$names" ] || return 0
  echo "$(echo "$names" | head -1 | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')-x$(echo "$names" | wc -l)"
}

# A results folder without a profile starts from what an earlier lease on a machine of the same
# name committed under reports/<machine>/ (its profile, its runs, its cudnn-default profile): the
# profile then measures only its missing cases and the runs add repeats.
seed_from_reports() {
  local machine dir
  machine=$(gpu_machine)
  dir=$repo/reports/$machine
  [ -n "$machine" ] && [ -f "$dir/profile.yaml" ] || return 0
  [ -f "$results/profile.yaml" ] && return 0
  cp "$dir/profile.yaml" "$results/profile.yaml"
  [ -f "$dir/runs.csv" ] && [ ! -f "$results/runs.csv" ] && cp "$dir/runs.csv" "$results/runs.csv"
  if [ -f "$dir/cudnn-default/profile.yaml" ] && [ ! -f "$results/cudnn-default/profile.yaml" ]; then
    mkdir -p "$results/cudnn-default"
    cp "$dir/cudnn-default/profile.yaml" "$results/cudnn-default/profile.yaml"
  fi
  say "session: continuing from reports/$machine (its profile$([ -f "$dir/runs.csv" ] && echo ", its runs"))"
}

# What is left, in order of value, until --deadline. Each step leaves a marker when it is done.
session() {
  local step built=yes
  seed_from_reports
  # The build runs every time (a no-op on a warm machine, the packed programs on a fresh one).
  if ! run_logged build; then
    say "session: the build failed (build.log); the PyTorch runs go on without it"
    built=
    run_trainers=pytorch
  fi
  run_logged data || return 1
  for step in profile runs check profile_cudnn_default; do
    [ -f "$results/$step.done" ] && continue
    if [ -z "$built" ] && [ "$step" != runs ]; then continue; fi
    if [ "$(time_left)" -lt 60 ]; then say "session: deadline before $step"; return 0; fi
    case $step in
      check)
        # The test suite (bounded) and nothing else: the full profile is the end-to-end check.
        runtime_env
        [ -f "$build_dir/build.ninja" ] || { say "check: no build tree (the programs were reused)"; continue; }
        { bounded cmake --build "$build_dir" -j "$(nproc)" &&
          (cd "$build_dir" && bounded ctest --output-on-failure -j "$(nproc)" --timeout 120); } \
          > "$results/check.log" 2>&1 || say "check: failures or cut short (see check.log)"
        tail -5 "$results/check.log" ;;
      runs)
        run_logged runs
        # Done only when both trainers ran every configuration.
        [ -n "$built" ] && grep -q "runs: all" "$results/runs.log" || continue ;;
      *)
        if ! run_logged "$step"; then say "session: $step did not finish (its log)"; continue; fi ;;
    esac
    touch "$results/$step.done"
  done
}

run_logged() {
  local step=$1
  shift
  say "$step: logging to $results/$step.log"
  "$step" "$@" 2>&1 | tee -a "$results/$step.log"
  return "${PIPESTATUS[0]}"
}

case "$command" in
  fetch-deps) fetch_deps ;;
  build) run_logged build ;;
  check) run_logged check ;;
  measure) run_logged measure "$@" ;;
  runs) run_logged data && run_logged runs ;;
  session) session ;;
  all)
    run_logged build
    run_logged check || say "check failed (see $results/check.log); measuring anyway"
    run_logged measure "$@"
    ;;
  *) say "unknown command '$command' (fetch-deps, build, check, measure, runs, all, session)"; exit 2 ;;
esac
