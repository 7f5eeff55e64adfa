#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures and builds trainsim into build/.
#   scripts/setup.sh               everything: simulate, measure, the tests and benchmarks
#   scripts/setup.sh --simulator   simulate alone, with the few packages it needs (scripts/run.sh)
# Used by scripts/run.sh and scripts/test.sh; safe to run again (only missing packages install,
# and a later full set-up builds on what --simulator built).
set -euo pipefail
cd "$(dirname "$0")/.."

simulator_only=false
if [ "${1:-}" = "--simulator" ]; then
  simulator_only=true
  shift
fi

# simulate: a compiler, CMake, Eigen, yaml-cpp, Boost.Program_options, nlohmann-json; gnuplot draws
# its plots. The rest: docs/DEPENDENCIES.md.
packages=(cmake ninja-build g++ libeigen3-dev libyaml-cpp-dev libboost-program-options-dev nlohmann-json3-dev
          gnuplot-nox)
if ! $simulator_only; then
  packages+=(libgtest-dev libbenchmark-dev libtorch-dev libgloo-dev python3-torch python3-torchvision
             zlib1g-dev dataset-fashion-mnist clang libclang-rt-14-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >&2
fi

jobs=$(nproc)
if $simulator_only; then
  # Options stated, not left to the cache: a full set-up before or after keeps its own.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_TESTS=OFF -DTRAINSIM_BENCHMARKS=OFF "$@" >&2
  cmake --build build -j "$jobs" --target simulate >&2
else
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_MEASURE=ON -DTRAINSIM_TESTS=ON \
    -DTRAINSIM_BENCHMARKS=ON "$@" >&2
  cmake --build build -j "$jobs" >&2
fi
