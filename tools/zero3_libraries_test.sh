#!/usr/bin/env bash
# The zero3 binary runs where no CUDA library is installed: it names none of
# cuBLAS, cuBLASLt, NCCL or the CUDA runtime as NEEDED, and its commands
# other than --backend cuda never load them (the backend opens them with
# dlopen when it starts).
set -uo pipefail

source tools/cli_test_lib.sh

if ! command -v readelf >/dev/null; then
  echo "readelf not installed (binutils); skipping the NEEDED check"
else
  needed="$(readelf -d "$ZERO3" | grep NEEDED)"
  if echo "$needed" | grep -Eiq 'cublas|nccl|cudart|libcuda'; then
    fail "the binary needs CUDA libraries at load time: $needed"
  fi
fi

# What the loader opens, per command: no CUDA library.
for args in "--help" "train --steps 1" \
            "config testing/testdata/configs/zero3_offload.json" \
            "whatif tools/whatif/scenarios/offload_pcie4_tp2_1.5b.textproto"; do
  # shellcheck disable=SC2086
  LD_DEBUG=files "$ZERO3" $args >"$TMP/out" 2>"$TMP/err" ||
    fail "zero3 $args failed"
  if grep -Eq 'file=.*(cublas|nccl)' "$TMP/err"; then
    fail "zero3 $args loaded a CUDA library"
  fi
done

# --version loads them on purpose, to say what it finds.
expect 0 --version
grep -q "^zero3 " "$TMP/out" || fail "--version: no version line"
grep -q "^CUDA backend: " "$TMP/out" || fail "--version: no CUDA backend line"

finish
