#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures and builds trainsim into build/.
# Used by scripts/run.sh and scripts/test.sh; safe to run again (only missing packages install).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libeigen3-dev libyaml-dev libboost-program-options-dev
          libgtest-dev libbenchmark-dev gnuplot-nox libtorch-dev libgloo-dev python3-torch python3-torchvision nlohmann-json3-dev
          zlib1g-dev dataset-fashion-mnist clang libclang-rt-14-dev)
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
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build build -j "$jobs" >&2
