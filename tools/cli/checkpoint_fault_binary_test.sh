#!/usr/bin/env bash
# Crashes and failed writes during `zero3 train --save`. The test-only
# hook ZERO3_CHECKPOINT_FAULT=POINT[:K[:ERRNO]] (core/engine/
# checkpoint_fault.h) kills the process (SIGKILL) the K-th time it reaches
# POINT, or with ERRNO makes the write there fail as the system would.
# The points, in a save's order:
#   snapshot         the state copied to host memory, nothing written yet
#   before_shard     a rank about to write its shard (in the background
#                    thread when the save is asynchronous)
#   after_shard      a rank's shard written (between shard writes when
#                    another rank's is still to come)
#   before_manifest  every shard written, no manifest yet
#   before_latest    the manifest written, `latest` not yet replaced
#   after_latest     `latest` replaced, old checkpoints not yet removed
# With two ranks in one process snapshot and the shard points are reached
# twice per save, the others once. Every run saves at steps 2, 4 and 6;
# each crash is at the step-4 save (the shard points in the background
# thread while step 5 trains, or blocking), and `--resume DIR --save DIR`
# then trains to step 6 from the newest complete checkpoint, with the
# losses, learning rates, gradient norms and loss scales of a run never
# interrupted, bit for bit.
set -uo pipefail

source tools/cli_test_lib.sh

values() {
  grep -o '"step": [0-9]*\|"loss": [^,]*\|"lr": [^,]*\|"grad_norm": [^,]*\|"loss_scale": [^,]*' "$1" |
    paste -d' ' - - - - -
}

RUN=(train --model tiny --ranks 2 --steps 6)
expect 0 "${RUN[@]}" --metrics "$TMP/straight.jsonl"

# crash FAULT LATEST FROM [FLAGS...]: a run killed at FAULT leaves LATEST
# in `latest`; `--resume DIR --save DIR` continues from step FROM (LATEST,
# or a newer step whose manifest was written) and finishes as the straight
# run. $KEEP: flags for the saving run only.
KEEP=""
crash() {
  local fault="$1" latest="$2" from="$3"
  shift 3
  local dir="$TMP/crash_${fault//:/_}$*$KEEP"
  dir="${dir// /_}"
  # shellcheck disable=SC2086
  ZERO3_CHECKPOINT_FAULT="$fault" "$ZERO3" "${RUN[@]}" --save "$dir" \
    --save-interval 2 $KEEP "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq 137 ] || fail "$fault $*: exit $got, want 137 (SIGKILL)"
  [ "$(cat "$dir/latest")" = "$latest" ] ||
    fail "$fault $*: latest is $(cat "$dir/latest"), want $latest"
  expect 0 "${RUN[@]}" --resume "$dir" --save "$dir" --save-interval 2 \
    --metrics "$TMP/resumed.jsonl" "$@"
  grep -q "^resuming from $dir/step_$from " "$TMP/out" ||
    fail "$fault $*: did not resume from step_$from"
  [ "$(cat "$dir/latest")" = step_6 ] || fail "$fault $*: latest is not step_6"
  local n
  n=$(wc -l <"$TMP/resumed.jsonl")
  [ "$n" -ge 2 ] || fail "$fault $*: resumed only $n steps"
  [ "$(values "$TMP/straight.jsonl" | tail -"$n")" = \
    "$(values "$TMP/resumed.jsonl")" ] ||
    fail "$fault $*: the resumed steps differ from the straight run's"
}

crash snapshot:3 step_2 2
crash before_shard:3 step_2 2
crash after_shard:3 step_2 2
crash after_shard:4 step_2 2
crash before_manifest:2 step_2 2
crash before_latest:2 step_2 4
crash after_latest:2 step_4 4
KEEP="--keep-last 1" crash after_latest:2 step_4 4
crash before_shard:3 step_2 2 --set zero3.checkpoint_write=blocking
crash before_latest:2 step_2 4 --set zero3.checkpoint_write=blocking

# A failed write (no space left, permission denied, a directory gone):
# the run stops naming the path and the system's reason, and `latest`
# keeps naming the previous checkpoint ...
fails() {
  local fault="$1" reason="$2" path="$3"
  local dir="$TMP/fail_${fault//:/_}"
  ZERO3_CHECKPOINT_FAULT="$fault" expect 1 "${RUN[@]}" --save "$dir" \
    --save-interval 2
  grep -q "^error: rank [01]: cannot write $dir/$path: $reason" "$TMP/err" ||
    fail "$fault: the error does not name $dir/$path and '$reason'"
  # Written in the background, the failure is seen at a later step.
  grep -q "^checkpoint: step [46] saved" "$TMP/out" &&
    fail "$fault: a later save went on after the error"
  [ "$(cat "$dir/latest")" = step_2 ] || fail "$fault: latest moved"
}
fails before_shard:3:ENOSPC "No space left on device" \
  "step_4/rank_0000[01].safetensors"
fails before_shard:4:EACCES "Permission denied" \
  "step_4/rank_0000[01].safetensors"
fails before_manifest:2:ENOENT "No such file or directory" \
  step_4/manifest.json

# ... or, with zero3.checkpoint_on_failure "continue", warns and trains on.
dir="$TMP/goes_on"
ZERO3_CHECKPOINT_FAULT=before_shard:3:ENOSPC expect 0 "${RUN[@]}" \
  --save "$dir" --save-interval 2 --set zero3.checkpoint_on_failure=continue
grep -q "^warning: checkpoint not saved: cannot write $dir/step_4/rank_0000[01].safetensors: No space left on device; training goes on" \
  "$TMP/err" || fail "continue: no warning naming the shard"
grep -q '^step 6/6' "$TMP/out" || fail "continue: did not train on"
grep -q "^checkpoint: step 4 saved" "$TMP/out" &&
  fail "continue: the failed save was reported saved"
[ ! -e "$dir/step_4/manifest.json" ] || fail "continue: step_4 looks complete"
[ "$(cat "$dir/latest")" = step_6 ] || fail "continue: latest is not step_6"
finish
