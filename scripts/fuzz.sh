#!/usr/bin/env bash
# libFuzzer runs of trainsim's five input readers (sweep config, profile, runs.csv, nccl-tests
# log, PyTorch profiler trace), built with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (docs/RELIABILITY.md). Each target starts from its seed inputs (fuzz/seeds.sh) and runs for
# SECONDS; the corpus it grows stays in BUILD/corpus/<target>, an input that crashes, hangs or
# trips a sanitizer is saved in BUILD/findings/<target>/ and makes the script exit 1. Findings of
# earlier runs stay there (named as such, not counted again) until you delete them.
# --runs N instead: N inputs per target from the seeds alone (a fresh corpus in
# BUILD/corpus-runs/) with a fixed random seed: a fixed amount of work (the test suite's).
#   scripts/fuzz.sh [--seconds N (600) | --runs N] [--build DIR (build-fuzz)] [TARGET...]
# A finding is re-run, under any compiler, with build/bin/fuzz_<target>_replay FILE.
# Exit 77 (a skipped test) when clang++ or its libFuzzer runtime (libclang-rt-14-dev) is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(config profile runs_csv nccl_log trace)
seconds=600
runs_per_target=""
build=build-fuzz
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    --runs) runs_per_target=${2:?--runs needs a number}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "error: scripts/fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [[ ! " ${all_targets[*]} " == *" $1 "* ]]; then
        echo "error: scripts/fuzz.sh: no fuzz target '$1' (targets: ${all_targets[*]})" >&2
        exit 2
      fi
      targets+=("$1"); shift ;;
  esac
done
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: scripts/fuzz.sh: --seconds $seconds: expected a whole number of seconds >= 1" >&2
  exit 2
fi
if [ -n "$runs_per_target" ] && ! [[ "$runs_per_target" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: scripts/fuzz.sh: --runs $runs_per_target: expected a whole number of inputs >= 1" >&2
  exit 2
fi
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! command -v clang++ > /dev/null; then
  echo "fuzz: skipped: clang++ is not installed (Debian: clang libclang-rt-14-dev)" >&2
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' > "$probe/p.cpp"
if ! clang++ -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2> /dev/null; then
  echo "fuzz: skipped: clang++ cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev)" >&2
  exit 77
fi

echo "fuzz: building the targets with clang, ASan and UBSan in $build" >&2
# The configure and build output goes to $build/build.log; on a failure its last lines are shown.
mkdir -p "$build"
log="$build/build.log"
failed_step() {
  echo "error: scripts/fuzz.sh: $1 failed; the last lines of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
}
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRAINSIM_FUZZ=ON -DTRAINSIM_MEASURE=OFF -DTRAINSIM_TESTS=OFF -DTRAINSIM_BENCHMARKS=OFF > "$log" 2>&1 ||
  failed_step "configuring $build"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >> "$log" 2>&1 ||
  failed_step "building the fuzz targets"

findings=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  # How long: SECONDS on the growing corpus, or RUNS inputs from the seeds with a fixed seed.
  budget=(-max_total_time="$seconds")
  extent="for $seconds s"
  if [ -n "$runs_per_target" ]; then
    corpus="$build/corpus-runs/$t"
    rm -rf "$corpus"
    budget=(-runs="$runs_per_target" -seed=1)
    extent="for $runs_per_target inputs from the seeds"
  fi
  found="$build/findings/$t"
  mkdir -p "$corpus" "$found"
  # Seeds named after their path: several are called profile.yaml or runs.csv.
  while read -r seed; do cp "$seed" "$corpus/seed-${seed//\//_}"; done < <(fuzz/seeds.sh "$t")
  log="$build/fuzz_$t.log"
  echo "fuzz: $t $extent (log $log)" >&2
  before=$(find "$found" -type f | wc -l)
  rc=0
  "$build/bin/fuzz_$t" "$corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$found/" -print_final_stats=1 > "$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  inputs=$(find "$corpus" -type f | wc -l)
  crashes=$(( $(find "$found" -type f | wc -l) - before ))
  earlier=""
  [ "$before" -eq 0 ] || earlier=" ($before from earlier runs in $found)"
  echo "fuzz: $t: ${runs:-?} executions (${rate:-?}/s), corpus $inputs inputs, $crashes new findings$earlier" >&2
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    findings=$((findings + 1))
    grep -m 3 -E "ERROR|runtime error|deadly signal|==ERROR" "$log" >&2 || tail -5 "$log" >&2
  fi
done
if [ "$findings" -ne 0 ]; then
  echo "fuzz: $findings of ${#targets[@]} targets found inputs that fail (in $build/findings/)" >&2
  exit 1
fi
echo "fuzz: no findings in ${#targets[@]} targets" >&2
