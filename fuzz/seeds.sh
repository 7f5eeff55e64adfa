#!/bin/sh
# The seed inputs of one fuzz target, one path per line, relative to the repository root: the
# test fixtures and the project's own configs, profiles, runs files and published logs. Used by
# the seed-replay tests (fuzz/CMakeLists.txt) and by scripts/fuzz.sh, so both start from one list.
# The trace seeds: the hand-made CPU, DDP and GPU steps of tests/trace_import_test.cpp written
# out (TEST FIXTURE), and mlp-legacy-step.json, tests/fixtures/trace/profile_step.py's trace as
# Debian's torch 1.13 recorded it (legacy profiler, no shapes), cut to step 2 and step 1's span.
#   fuzz/seeds.sh config|profile|runs_csv|nccl_log|trace
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
  config) ls tests/fixtures/*/sweep*.yaml configs/*.yaml configs/*/*.yaml ;;
  profile) ls tests/fixtures/*/*profile.yaml reports/*/profile.yaml reports/*/*/profile.yaml ;;
  runs_csv) ls tests/fixtures/compare/*.csv reports/*/runs.csv reports/*/*/runs.csv ;;
  nccl_log) ls tests/fixtures/measure/*.log reports/published/nccl-tests/*.log ;;
  trace) ls tests/fixtures/trace/*.json ;;
  *) echo "usage: fuzz/seeds.sh config|profile|runs_csv|nccl_log|trace" >&2; exit 2 ;;
esac
