#!/usr/bin/env bash
# tools/cli/checkpoint_benchmark.sh runs and reports both modes (its
# figures are not checked: they are wall-clock times).
set -uo pipefail

source tools/cli_test_lib.sh

tools/cli/checkpoint_benchmark.sh -z "$ZERO3" -d "$TMP" -n 2 -s 6 -- \
  --model tiny --ranks 2 >"$TMP/out" 2>"$TMP/err" ||
  fail "the benchmark failed: $(cat "$TMP/err")"
for mode in blocking async; do
  grep -Eq "^$mode +[0-9.]+ +-?[0-9.]+ " "$TMP/out" ||
    fail "no figures for $mode: $(cat "$TMP/out")"
done
grep -q "^one checkpoint: " "$TMP/out" || fail "no checkpoint size"
finish
