#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install what simulate needs, build it alone, simulate
# the bundled sweep (measure and the tests build with scripts/test.sh or scripts/setup.sh).
# Extra arguments go to simulate, e.g. scripts/run.sh --out out/ --trace out/trace.json
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --simulator
exec build/bin/simulate configs/sweep.yaml "$@"
