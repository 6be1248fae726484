#!/usr/bin/env bash
# `zero3 train` stopped by SIGINT, SIGTERM or SIGHUP: it finishes the step in
# progress, writes the trace, the metrics, the summary and the final
# checkpoint, and exits 128 + the signal's number.
set -uo pipefail

source tools/cli_test_lib.sh

# interrupt SIGNAL WANT DIR ARGS...: starts zero3 train ARGS with its
# outputs in DIR, sends SIGNAL once two steps are in DIR/m.jsonl, and
# checks the exit status WANT.
interrupt() {
  local sig="$1" want="$2" dir="$3"
  shift 3
  mkdir -p "$dir"
  "$ZERO3" train --steps 1000000 --metrics "$dir/m.jsonl" \
    --trace "$dir/t.json" "$@" >"$dir/out" 2>"$dir/err" &
  local pid=$!
  for _ in $(seq 600); do
    [ -s "$dir/m.jsonl" ] && [ "$(wc -l <"$dir/m.jsonl")" -ge 2 ] && break
    sleep 0.1
  done
  kill -s "$sig" "$pid"
  wait "$pid"
  local got=$?
  [ "$got" -eq "$want" ] || fail "$sig: exit $got, want $want"
}

# SIGINT in data mode with --save: exit 130 and everything written.
D="$TMP/int"
interrupt INT 130 "$D" --save "$D/ck"
grep -q "SIGINT: stopped after step [0-9]* of 1000000" "$D/err" ||
  fail "SIGINT: no line saying where the run stopped"
N="$(sed -n 's/.*stopped after step \([0-9]*\) of.*/\1/p' "$D/err")"
[ "$(wc -l <"$D/m.jsonl")" -eq "$N" ] || fail "SIGINT: want $N metrics lines"
grep -q "^step *$N/1000000 " "$D/out" || fail "SIGINT: no line for step $N"
grep -q '"traceEvents"' "$D/t.json" || fail "SIGINT: no trace"
grep -q "^end: pinned host memory" "$D/out" || fail "SIGINT: no summary"
grep -q "race detector: 0 races found" "$D/out" || fail "SIGINT: no race report"
grep -q "checkpoint: step $N saved to" "$D/out" || fail "SIGINT: no checkpoint"
[ -d "$D/ck/step_$N" ] || fail "SIGINT: no checkpoint directory step_$N"
ls "$D" | grep -q '\.tmp' && fail "SIGINT: a temporary file was left"

# SIGTERM in timing mode: exit 143.
D="$TMP/term"
interrupt TERM 143 "$D" --mode timing
grep -q "SIGTERM: stopped after step" "$D/err" || fail "SIGTERM: no stop line"
grep -q '"traceEvents"' "$D/t.json" || fail "SIGTERM: no trace"

# SIGHUP (a closed terminal or ssh session) as SIGTERM: exit 129, the
# final checkpoint saved.
D="$TMP/hup"
interrupt HUP 129 "$D" --save "$D/ck"
grep -q "SIGHUP: stopped after step" "$D/err" || fail "SIGHUP: no stop line"
grep -q "checkpoint: step [0-9]* saved to" "$D/out" || fail "SIGHUP: no checkpoint"

# A reader that goes away ends the printing, not the run: every step and
# the metrics are done, exit 0.
D="$TMP/pipe"
mkdir -p "$D"
"$ZERO3" train --steps 40 --metrics "$D/m.jsonl" 2>"$D/err" | head -n 1 >/dev/null
status="${PIPESTATUS[0]}"
[ "$status" -eq 0 ] || fail "closed stdout: exit $status, want 0"
[ "$(wc -l <"$D/m.jsonl")" -eq 40 ] || fail "closed stdout: want 40 metrics lines"

# The checked steps are the steps done.
D="$TMP/check"
interrupt INT 130 "$D" --check-reference
grep -q "check-reference: .*: OK" "$D/out" || fail "check-reference after SIGINT"

finish
