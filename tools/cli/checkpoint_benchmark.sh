#!/usr/bin/env bash
# What a checkpoint save costs zero3 train: the step that takes the
# snapshot, and the steps that run while an asynchronous save is written,
# for zero3.checkpoint_write "blocking" and "async" (docs/checkpoints.md).
# Prints figures; asserts nothing about them.
#
#   tools/cli/checkpoint_benchmark.sh [-z ZERO3] [-n INTERVAL] [-s STEPS]
#       [-d DIR] -- TRAIN_FLAGS...
#
# runs `ZERO3 train TRAIN_FLAGS --steps STEPS --save DIR/MODE
# --save-interval INTERVAL --set zero3.checkpoint_write=MODE` for each mode
# and times each output line as it arrives (wall clock). A step's time is
# the gap between its line and the previous step's; the save after step k
# falls in step k+1's gap. Reported, per mode: the median step without a
# save, what the saving step took beyond it, how many steps ran until the
# checkpoint was published and what each took beyond the median, and the
# time from step k's line to the `checkpoint: step k saved` line. The run's
# last save (always waited for) is left out; saves start after step 2.
#
# On the simulator (data mode; times are the CPU simulation's):
#   tools/cli/checkpoint_benchmark.sh -- --ranks 2 --seq 32 --micro-batch 1 \
#     --model testing/testdata/models/checkpoint_bench.textproto \
#     --data synthetic
# On a GPU node:
#   tools/cli/checkpoint_benchmark.sh -- --backend cuda --model qwen2.5-1.5b
set -uo pipefail

ZERO3=${ZERO3:-bazel-bin/tools/zero3}
INTERVAL=4
STEPS=12
DIR=""
while getopts "z:n:s:d:" opt; do
  case "$opt" in
    z) ZERO3="$OPTARG" ;;
    n) INTERVAL="$OPTARG" ;;
    s) STEPS="$OPTARG" ;;
    d) DIR="$OPTARG" ;;
    *) sed -n '2,8p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ -z "$DIR" ]; then
  DIR=$(mktemp -d)
  trap 'rm -rf "$DIR"' EXIT
fi

# Each line of `zero3 train` prefixed with the wall time it arrived, in
# seconds.
timed_run() {
  "$ZERO3" train "$@" 2>&1 | while IFS= read -r line; do
    printf '%s %s\n' "$EPOCHREALTIME" "$line"
  done
}

report() {
  awk -v mode="$1" -v n="$INTERVAL" -v steps="$STEPS" '
    $2 == "step" {
      split($3, f, "/"); s = f[1] + 0
      t[s] = $1; if (prev != "") dt[s] = ($1 - prev) * 1000; prev = $1
    }
    $2 == "checkpoint:" && $5 == "saved" { pub[$4 + 0] = $1; last_step[$4 + 0] = s }
    $2 == "error:" { print mode ": " $0 > "/dev/stderr"; failed = 1 }
    END {
      if (failed) exit 1
      # Steps that neither follow a save nor run while one is written.
      for (k = n; k < steps; k += n) {
        saving[k + 1] = 1
        for (j = k + 2; j <= last_step[k]; ++j) writing[j] = 1
      }
      m = 0
      for (s2 = 3; s2 <= steps; ++s2) {
        if (!(s2 in saving) && !(s2 in writing) && (s2 in dt)) v[++m] = dt[s2]
      }
      for (i = 2; i <= m; ++i) {  # insertion sort: mawk has no asort
        x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; --j) v[j + 1] = v[j]
        v[j + 1] = x
      }
      base = m ? v[int((m + 1) / 2)] : 0
      saves = 0; cost = 0; during = 0; extra = 0; latency = 0
      for (k = n; k < steps; k += n) {
        if (k < 2 || !(k in pub)) continue
        ++saves; cost += dt[k + 1] - base; latency += (pub[k] - t[k]) * 1000
        for (j = k + 2; j <= last_step[k]; ++j) { ++during; extra += dt[j] - base }
      }
      printf "%-9s %10.1f %12.1f %12.1f %14.2f %12.1f\n", mode, base,
        saves ? cost / saves : 0, saves ? during / saves : 0,
        during ? extra / during : 0, saves ? latency / saves : 0
    }'
}

echo "checkpoint every $INTERVAL steps of $STEPS: zero3 train $*"
printf '%-9s %10s %12s %12s %14s %12s\n' mode "step ms" "save +ms" \
  "steps after" "each +ms" "saved in ms"
status=0
for mode in blocking async; do
  rm -rf "${DIR:?}/$mode"
  timed_run "$@" --steps "$STEPS" --save "$DIR/$mode" \
    --save-interval "$INTERVAL" --set "zero3.checkpoint_write=$mode" \
    >"$DIR/$mode.log"
  report "$mode" <"$DIR/$mode.log" || status=1
done
du -sh "$DIR/async/step_$INTERVAL" 2>/dev/null | awk '{ print "one checkpoint: " $1 }'
exit $status
