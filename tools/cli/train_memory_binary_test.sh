#!/usr/bin/env bash
# `zero3 train`'s memory preflight as a user meets it: --dry-run's table,
# runs that do not fit ending with exit 2 and the estimate before anything
# is allocated, the pinned budget (--max-pinned-bytes) and its pageable
# fallback.
set -uo pipefail

source tools/cli_test_lib.sh

expect 0 train --dry-run
for want in "memory estimate" "device (in host RAM)" "pinned host" \
            "pageable host" "host total" "fits: the run can start"; do
  grep -q "$want" "$TMP/out" || fail "--dry-run lacks '$want'"
done
grep -q "^step" "$TMP/out" && fail "--dry-run trained"

# The repros: a run that does not fit this machine stops at once with the
# estimate and the fixes (where the machine is large enough, it would
# train: then only the dry run is checked).
for args in "--model qwen2.5-7b --steps 1" \
            "--model qwen2.5-0.5b --ranks 2 --seq 32 --steps 1"; do
  # shellcheck disable=SC2086
  "$ZERO3" train $args --dry-run >"$TMP/out" 2>"$TMP/err"
  status=$?
  # The dry run's status says what its last line says: 0 fits, 2 does not.
  if grep -q "^does not fit" "$TMP/out"; then
    [ "$status" -eq 2 ] || fail "$args --dry-run: does not fit, exit $status"
  else
    [ "$status" -eq 0 ] || fail "$args --dry-run: fits, exit $status"
  fi
  if grep -q "^does not fit" "$TMP/out"; then
    # shellcheck disable=SC2086
    expect 2 train $args
    grep -q "error: not enough host memory: .* need about .*available" \
      "$TMP/err" || fail "$args: no estimate in the error"
    grep -q -- "--mode timing" "$TMP/err" || fail "$args: no fix named"
    [ -s "$TMP/out" ] && fail "$args: something ran"
  fi
done
# 64 simulated ranks of 7B parameters need terabytes in data mode.
expect 2 train --model qwen2.5-7b --ranks 64 --steps 1
grep -q "not enough host memory" "$TMP/err" || fail "7B x 64: no host error"
# In timing mode nothing is allocated: the same run is costed.
expect 0 train --model qwen2.5-7b --ranks 64 --steps 1 --mode timing \
  --symmetric
# A device too small for the shard: the device check, with offload named.
expect 2 train --model qwen2.5-7b --ranks 1 --steps 1 --mode timing \
  --set zero_optimization.offload_optimizer.device=none
grep -q "not enough device memory: each rank needs about" "$TMP/err" ||
  fail "no device error"
grep -q "offload_param.device=cpu" "$TMP/err" || fail "device: no fix named"

# The pinned budget: over it, an error naming the key ...
expect 2 train --steps 1 --max-pinned-bytes 100000
grep -q "zero3.max_pinned_bytes" "$TMP/err" || fail "budget: key not named"
expect 2 train --steps 1 --max-pinned-bytes -5
grep -q "zero3.max_pinned_bytes.*must be >= 0" "$TMP/err" ||
  fail "negative budget accepted"
# ... or with the pageable fallback, one warning and the run goes on.
expect 0 train --steps 2 --max-pinned-bytes 100000 \
  --set zero3.pinned_fallback=pageable
[ "$(grep -c "^warning: pinned host memory refused" "$TMP/err")" -eq 1 ] ||
  fail "fallback: not exactly one warning line"
grep -q "pageable instead" "$TMP/out" || fail "fallback: not in the summary"
grep -q "^step 2/2" "$TMP/out" || fail "fallback: the run did not finish"

finish
