#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install, build, simulate the bundled sweep.
# Extra arguments go to simulate, e.g. scripts/run.sh --out out/ --trace out/trace.json
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/simulate configs/sweep.yaml "$@"
