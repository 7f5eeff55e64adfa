#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install, build, run every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
# glibc's malloc with its mmap threshold fixed at 1 GiB and its heap never trimmed: the LibTorch
# tests' tensors are then reused from the heap instead of mapped and faulted in afresh on every
# iteration, which on a VM whose page faults are dear (docs/MEASURE.md "Page faults") took 18% of
# the suite's wall time (ctest -j2 on the 2-core VM: 767 s without, 631 s with; every test passes
# either way). Set for the tests only: `measure` and the trainers run under the user's own malloc.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=8589934592"
status=0
ctest --output-on-failure -j "$(nproc)" "$@" || status=$?
if [ "$status" -ne 0 ] && [ -s Testing/Temporary/LastTestsFailed.log ]; then
  # A failed test's output scrolls far up a log that is often read from its end: repeat the last
  # lines of each one's output (from ctest's own log, not a rerun) after the summary.
  while IFS=: read -r _ name; do
    echo "---- the end of ${name}'s output ----"
    awk -v name="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == name { inside = 1; next }
      inside && /^<end of output>$/ { exit }
      inside { print }' Testing/Temporary/LastTest.log | tail -n 60
  done < Testing/Temporary/LastTestsFailed.log
fi
exit "$status"
