# cli_test_lib.sh: what the shell tests of the zero3 binary share. Source it
# from the runfiles root; it sets ZERO3 (the binary), TMP (a scratch
# directory) and `failures`, and defines:
#   fail MESSAGE...   records a failure
#   expect CODE ARGS  runs zero3 ARGS, checks the exit code and keeps stdout
#                     and stderr in $TMP/out and $TMP/err
#   finish            exits 1 if anything failed, else prints PASS

ZERO3=tools/zero3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

expect() {
  local want="$1"
  shift
  "$ZERO3" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "zero3 $*: exit $got, want $want"
    sed 's/^/  stderr: /' "$TMP/err" >&2
  fi
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "PASS"
}
