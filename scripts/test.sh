#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install, build, run every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
