#!/usr/bin/env bash
# Every shipped what-if scenario (tools/whatif/scenarios/) loads and runs:
# exit 0 (some variant fits), the table's header and no error, so a
# scenario the docs quote cannot rot unnoticed.
set -uo pipefail

source tools/cli_test_lib.sh

count=0
for scenario in tools/whatif/scenarios/*.textproto; do
  count=$((count + 1))
  expect 0 whatif "$scenario" --steps 2
  grep -q "^variant .*tokens/s" "$TMP/out" || fail "$scenario: no table"
  if grep -q "error" "$TMP/err"; then
    fail "$scenario: an error on stderr: $(head -1 "$TMP/err")"
  fi
done
[ "$count" -ge 10 ] || fail "only $count scenarios found"
finish
