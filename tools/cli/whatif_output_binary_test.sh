#!/usr/bin/env bash
# `zero3 whatif` as a user sees a sweep: a progress line per variant on
# stderr (--progress), and a PNG plot through gnuplot's pngcairo where
# gnuplot is installed.
set -uo pipefail

source tools/cli_test_lib.sh

SWEEP=(whatif --model qwen2.5-0.5b --seq 256 --steps 1
  --vary gpus=2,8,32 --vary zero3.grad_offload=blocking,async)

expect 0 "${SWEEP[@]}" --progress
[ "$(grep -c '^whatif: [1-6]/6 variants done (gpus=' "$TMP/err")" -eq 6 ] ||
  fail "--progress: want 6 progress lines on stderr"
grep -q "variants done" "$TMP/out" && fail "progress lines on stdout"

# Without --progress and with stderr not a terminal: no progress lines.
expect 0 "${SWEEP[@]}"
grep -q "variants done" "$TMP/err" && fail "progress lines without a terminal"

if command -v gnuplot >/dev/null; then
  expect 0 "${SWEEP[@]}" --plot "$TMP/p.png"
  [ "$(head -c 8 "$TMP/p.png" | od -An -tx1 | tr -d ' \n')" = \
    "89504e470d0a1a0a" ] || fail "--plot p.png is not a PNG"
  ls "$TMP" | grep -qE '\.(dat|gp|partial)$' && fail "plot files left behind"
  expect 0 "${SWEEP[@]}" --plot "$TMP/p.svg"
  grep -q "<svg" "$TMP/p.svg" || fail "--plot p.svg is not an SVG"
else
  echo "gnuplot not installed: plot checks skipped"
fi

finish
