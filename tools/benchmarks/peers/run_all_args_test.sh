#!/usr/bin/env bash
# run_all.sh refuses bad arguments with exit 2 and a message naming them,
# before it installs, unpacks or runs anything, and lists its variants.
set -u
RUN_ALL=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-.}/tools/benchmarks/peers/run_all.sh
[ -f "$RUN_ALL" ] || RUN_ALL=$(dirname "$0")/run_all.sh
export OUT=${TEST_TMPDIR:-/tmp}/run_all_out
fail=0
refuses() {  # expected-text args...
  local want=$1; shift
  local err rc
  err=$(bash "$RUN_ALL" "$@" 2>&1 > /dev/null); rc=$?
  if [ $rc -ne 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: run_all.sh $* -> rc $rc, '$err' (want rc 2 and '$want')"; fail=1
  fi
}
refuses "--clip takes a number >= 0, not 'abc'" --clip abc
refuses "--clip takes a number >= 0, not '-1'" --clip -1
refuses "--clip takes a number >= 0, not '1.0.0'" --clip 1.0.0
refuses "--models takes 0.5b, 1.5b, 3b, 7b (Qwen2.5), qwen3-4b, llama-3.2-3b, not '9b'" --models 9b
refuses "no variant 'nope'" --only nope
refuses "--checkpointing takes none, hf or ds, not 'all'" --checkpointing all
refuses "--mbs and --seq take positive integers, not '0'" --mbs 0
refuses "unknown argument '--bogus'" --bogus
[ -e "$OUT" ] && { echo "FAIL: a refused run created $OUT"; fail=1; }
list=$(bash "$RUN_ALL" --list)
for v in zero3-pinned zero3-superoffload zero3-speculative-forward ds-head-superoffload fsdp2-fused; do
  grep -q " $v " <<< "$list" || grep -q "\*$v " <<< "$list" || { echo "FAIL: --list lacks $v"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS"
exit $fail
