#!/usr/bin/env bash
# A rank that dies or stalls does not hang the others (docs/RELIABILITY.md, "Kills and resume"):
# `measure train` on 2 Gloo ranks with one rank killed (kill -9) or stopped (SIGSTOP) at several
# points, found from the rank's heartbeat file, and `measure`'s collectives case with a rank
# killed mid-benchmark. Each must end within 60 s with one error naming the rank and its step,
# record nothing that did not finish, and (the profile) resume to the full result.
# Usage: rank_failures.sh BIN_DIR
set -euo pipefail
bin=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/trainsim-kills-XXXXXX")
export TMPDIR=$work  # the launchers' store folders, where the heartbeat files are
export TRAINSIM_STALL_S=5
cleanup() { pkill -KILL -f -- "--store $work/" 2> /dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Waits until the heartbeat file of rank RANK in a store folder PREFIX<pid>-* holds PATTERN (it is
# rewritten once a second: a pattern must match a stretch of a few seconds, not one iteration);
# prints the rank's pid. Gives up after 120 s.
wait_for_step() {
  local pid=$1 prefix=$2 rank=$3 pattern=$4 file child
  for _ in $(seq 1200); do
    for file in "$work"/"$prefix""$pid"-*/progress-"$rank"; do
      [ -f "$file" ] && grep -qE -- "$pattern" "$file" 2> /dev/null || continue
      for child in $(pgrep -P "$pid"); do
        if tr '\0' ' ' < "/proc/$child/cmdline" 2> /dev/null | grep -q -- "--rank $rank "; then
          echo "$child"
          return 0
        fi
      done
    done
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

# kill_train NAME RANK SIGNAL PATTERN EXPECTED: a 2-rank run, rank RANK sent SIGNAL once its step
# matches PATTERN; measure must exit non-zero within 60 s with EXPECTED in its last error line.
kill_train() {
  local name=$1 rank=$2 signal=$3 pattern=$4 expected=$5 pid target start status=0 elapsed line
  rm -f "$work/runs.csv"
  "$bin/measure" train --device cpu --strategy ddp --gpus 2 --batch-per-gpu 4 --train-samples 128 \
    --epochs 2 --workers 0 --threads 1 --quiet --no-probe --runs "$work/runs.csv" 2> "$work/$name.err" &
  pid=$!
  target=$(wait_for_step "$pid" trainsim-train- "$rank" "$pattern") \
    || { wait "$pid" || true; cat "$work/$name.err" >&2; fail "$name: rank $rank never reached '$pattern'"; }
  start=$(date +%s)
  kill "-$signal" "$target"
  wait "$pid" || status=$?
  elapsed=$(( $(date +%s) - start ))
  [ "$status" -ne 0 ] || fail "$name: measure train exited 0 after its rank $rank was sent SIG$signal"
  [ "$elapsed" -le 60 ] || fail "$name: measure train took ${elapsed}s to end"
  line=$(grep '^error: train: ' "$work/$name.err" | tail -n 1)
  [[ $line == *"$expected"* ]] || fail "$name: the error does not say '$expected': $(cat "$work/$name.err")"
  [ ! -s "$work/runs.csv" ] || fail "$name: a row was recorded for a run that did not finish"
  pgrep -f -- "--store $work/trainsim-train-$pid-" > /dev/null && fail "$name: a rank outlived the run"
  echo "$name: ended in ${elapsed}s: $line"
}

kill_train start-kill 1 KILL '.' "rank 1 of 2 "
kill_train epoch1-kill 1 KILL '^epoch 1/2, iteration' "rank 1 of 2 (${bin}/measure) was killed by signal 9 (Killed) (last step: epoch 1/2, iteration "
kill_train epoch2-kill-rank0 0 KILL '^epoch 2/2, iteration' "rank 0 of 2 (${bin}/measure) was killed by signal 9 (Killed) (last step: epoch 2/2, iteration "
kill_train epoch1-stop 1 STOP '^epoch 1/2, iteration' "rank 1 of 2 (${bin}/measure) stalled: no heartbeat for "
kill_train start-stop 0 STOP '.' "rank 0 of 2 (${bin}/measure) stalled: no heartbeat for "
kill_train epoch2-stop-rank0 0 STOP '^epoch 2/2, iteration' "rank 0 of 2 (${bin}/measure) stalled: no heartbeat for "

# The profile's collectives: a rank killed in the middle of the 2-rank all-reduce curve. The profile
# keeps what finished (compute) and no collectives; --resume then measures them.
profile=$work/profile.yaml
tiny=(--device cpu --models resnet18-cifar --batches 2 --warmup 0 --repeats 1 --threads 1 --ranks 2
      --pytorch off --skip contention,loader --collectives-max-bytes 16777216 --collective-repeats 200
      --out "$profile")
"$bin/measure" "${tiny[@]}" 2> "$work/profile.err" &
pid=$!
target=$(wait_for_step "$pid" trainsim-collective- 1 '^all_reduce of [0-9]+ bytes') \
  || { wait "$pid" || true; cat "$work/profile.err" >&2; fail "profile: no collective rank reached the all_reduce benchmark"; }
start=$(date +%s)
kill -KILL "$target"
status=0
wait "$pid" || status=$?
elapsed=$(( $(date +%s) - start ))
[ "$status" -ne 0 ] || fail "profile: measure exited 0 after a collective rank was killed"
[ "$elapsed" -le 60 ] || fail "profile: measure took ${elapsed}s to end"
grep -q "rank 1 of 2 (.*) was killed by signal 9 (Killed) (last step: all_reduce of " "$work/profile.err" \
  || fail "profile: the error does not name the rank and step: $(tail -n 3 "$work/profile.err")"
grep -q '^collectives:' "$profile" && grep -q 'op: all_reduce' "$profile" \
  && fail "profile: collectives recorded from a benchmark that did not finish"
grep -q '^models:' "$profile" || fail "profile: the compute measured before the kill was lost"
grep -q 'resnet18-cifar batch 2: sum of parts' "$work/profile.err" || fail "profile: no compute line in its log"
echo "profile: ended in ${elapsed}s: $(grep '^error' "$work/profile.err" | tail -n 1)"
"$bin/measure" "${tiny[@]}" --resume 2> "$work/resume.err" || { cat "$work/resume.err" >&2; fail "profile: --resume failed"; }
grep -q 'op: "\{0,1\}all_reduce' "$profile" || fail "profile: --resume did not measure the collectives"
grep -qE ' [1-9][0-9]* already in the profile' "$work/resume.err" \
  || fail "profile: --resume kept nothing: $(cat "$work/resume.err")"
grep -q 'resnet18-cifar batch 2: sum of parts' "$work/resume.err" && fail "profile: --resume measured the compute again"
echo "rank failures: 7 kill and stop points, every one ended with the rank and its step named"
