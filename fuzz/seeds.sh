#!/bin/sh
# The seed inputs of one fuzz target, one path per line, relative to the repository root: the
# test fixtures and the project's own configs, profiles, runs files and published logs. Used by
# the seed-replay tests (tests/fuzz.cmake) and by scripts/fuzz.sh, so both start from one list.
#   fuzz/seeds.sh config|profile|runs_csv|nccl_log
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
  config) ls tests/fixtures/*/sweep*.yaml configs/*.yaml configs/*/*.yaml ;;
  profile) ls tests/fixtures/*/*profile.yaml reports/*/profile.yaml reports/*/*/profile.yaml ;;
  runs_csv) ls tests/fixtures/compare/*.csv reports/*/runs.csv reports/*/*/runs.csv ;;
  nccl_log) ls tests/fixtures/measure/*.log reports/published/nccl-tests/*.log ;;
  *) echo "usage: fuzz/seeds.sh config|profile|runs_csv|nccl_log" >&2; exit 2 ;;
esac
