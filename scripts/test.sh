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
ctest --output-on-failure -j "$(nproc)" "$@"
