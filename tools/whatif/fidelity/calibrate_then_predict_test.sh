#!/usr/bin/env bash
# calibrate_then_predict.sh refuses bad arguments with exit 2 before it runs
# anything, and measures exactly the cases of h200_1x_calibrated.textproto.
set -u
dir=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-.}/tools/whatif/fidelity
[ -f "$dir/calibrate_then_predict.sh" ] || dir=$(dirname "$0")
script=$dir/calibrate_then_predict.sh
out=${TEST_TMPDIR:-/tmp}/calibrate_then_predict_out
fail=0
refuses() {  # expected-text args...
  local want=$1; shift
  local err rc
  err=$(bash "$script" "$@" 2>&1 > /dev/null); rc=$?
  if [ $rc -ne 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: $* -> rc $rc, '$err' (want rc 2 and '$want')"; fail=1
  fi
}
refuses "usage:"
refuses "STEPS takes an integer >= 2" /bin/true "$out" 1
refuses "STEPS takes an integer >= 2" /bin/true "$out" six
refuses "BUDGET_S takes a number of seconds, not '-5'" /bin/true "$out" 6 -5
refuses "/nonexistent/zero3 is not an executable zero3 build" /nonexistent/zero3 "$out"
[ -e "$out" ] && { echo "FAIL: a refused run created $out"; fail=1; }
# The script's cases are the set's, name for name.
script_cases=$(grep -oE '^  "[a-z0-9._]+\|' "$script" | tr -d ' "|' | sort)
set_cases=$(grep -oE '^  name: "[^"]+"' "$dir/h200_1x_calibrated.textproto" |
  sed 's/.*"\(.*\)"/\1/' | sort)
if [ -z "$script_cases" ] || [ "$script_cases" != "$set_cases" ]; then
  echo "FAIL: the script's cases differ from the set's:"
  diff <(echo "$script_cases") <(echo "$set_cases")
  fail=1
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail
