#!/usr/bin/env bash
# All GPU-machine work in a few commands (see docs/MEASURE.md):
#
#   scripts/gpu-measure.sh fetch-deps     on a development machine with apt: downloads the Debian
#                                         packages the GPU machine may lack (yaml-cpp, Boost
#                                         program_options, Eigen, GoogleTest) into .deps/debs
#   scripts/gpu-measure.sh build          configure against the PyTorch wheel's LibTorch (CUDA,
#                                         NCCL from the nvidia-nccl wheel) and build into build-gpu/
#   scripts/gpu-measure.sh check          the test suite and `measure --quick` on the GPU
#   scripts/gpu-measure.sh measure [-- FLAGS]   the full `measure` (continues an interrupted run)
#   scripts/gpu-measure.sh all [-- FLAGS] build, check, measure
#
# Options (before the command): --results DIR (default out/gpu, git-ignored: kept between
# calls while the machine stays up), --copy-to DIR (copy the results folder there at the end).
# Everything each step prints goes to DIR/<step>.log too; the profile lands in
# DIR/reports/<machine>/profile.yaml with collectives.txt, the environment in DIR/environment.txt.
# Each step fits the GPU machine's 10-minute command limit; `measure` can be re-run after a
# timeout and resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

results=out/gpu
copy_to=
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results=$2; shift 2 ;;
    --copy-to) copy_to=$2; shift 2 ;;
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
               libeigen3-dev libgtest-dev nlohmann-json3-dev)

say() { echo "gpu-measure: $*" >&2; }

finish() {
  if [ -n "$copy_to" ]; then
    mkdir -p "$copy_to"
    cp -r "$results"/. "$copy_to"/
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
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' || true
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
  local args=(-S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_BENCHMARKS=OFF)
  [ -n "$nccl_root" ] && args+=(-DNCCL_ROOT="$nccl_root")
  [ -n "$nvcc_path" ] && args+=(-DCMAKE_CUDA_COMPILER="$nvcc_path" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc_path")")")
  if ! cmake "${args[@]}" -DCMAKE_PREFIX_PATH="$prefix"; then
    say "configure failed with the system packages; trying the unpacked Debian packages in .deps/"
    unpack_deps
    prefix="$torch_prefix;$deps_root/usr"
    export LD_LIBRARY_PATH="$deps_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ -f "$deps_root/usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake" ] || tests=OFF
    rm -f "$build_dir/CMakeCache.txt"
    cmake "${args[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DTRAINSIM_TESTS="$tests" \
      -DEigen3_DIR="$deps_root/usr/share/eigen3/cmake"
  fi
}

build() {
  environment
  configure
  cmake --build "$build_dir" -j "$(nproc)"
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

run_logged() {
  local step=$1
  shift
  say "$step: logging to $results/$step.log"
  "$step" "$@" 2>&1 | tee "$results/$step.log"
  return "${PIPESTATUS[0]}"
}

case "$command" in
  fetch-deps) fetch_deps ;;
  build) run_logged build ;;
  check) run_logged check ;;
  measure) run_logged measure "$@" ;;
  all)
    run_logged build
    run_logged check || say "check failed (see $results/check.log); measuring anyway"
    run_logged measure "$@"
    ;;
  *) say "unknown command '$command' (fetch-deps, build, check, measure, all)"; exit 2 ;;
esac
