#!/usr/bin/env bash
# The zero3 binary given absurd or malformed arguments: every integer flag
# out of its range, directories where files belong, empty paths and
# `--help=VALUE` end with exit 2 and a message naming the flag and limit.
set -uo pipefail

source tools/cli_test_lib.sh

# want_err PATTERN: stderr matches PATTERN.
want_err() {
  grep -q -- "$1" "$TMP/err" || fail "stderr lacks '$1': $(cat "$TMP/err")"
}

# 64-bit values that a 32-bit cast would have wrapped, and values past the
# stated limits.
expect 2 train --ranks 4294967298 --steps 1
want_err "--ranks: must be from 1 to 1048576, got \"4294967298\""
expect 2 train --ranks 2147483648 --steps 1
want_err "--ranks: must be from 1 to 1048576"
expect 2 train --steps 9223372036854775807 --mode timing --ranks 1
want_err "--steps: must be from 1 to 1000000"
expect 2 train --steps 4294967297
want_err "--steps: must be from 1 to 1000000"
expect 2 train --seq 0
want_err "--seq: must be from 1 to 1048576"
expect 2 train --accumulation 1000000
want_err "--accumulation must be an integer from 1 to 1024"
expect 2 train --micro-batch 99999999999
want_err "--micro-batch must be an integer from 1 to 65536"
expect 2 train --save "$TMP/ck" --save-interval -1
want_err "--save-interval: must be from 0 to 1000000"
expect 2 whatif --gpus 4294967304
want_err "--gpus: must be from 1 to 1048576"
expect 2 whatif --steps -1
want_err "--steps: must be from 1 to 1000"
expect 2 whatif --accumulation 1000000 --steps 1
want_err "--accumulation: must be from 1 to 1024"
expect 2 whatif --tp 1e30
want_err "--tp: must be from 1 to 1048576"
expect 2 config testing/testdata/configs/zero3_offload.json --world-size -2
want_err "--world-size: must be from 1 to 1048576"
expect 2 calibrate --reps 0
want_err "--reps: must be from 1 to 10000"

# Help states each range and each default once.
expect 0 whatif --help
grep -q -- "--gpus N .*GPUs (ranks) (from 1 to 1048576; default: 8)" \
  "$TMP/out" || fail "whatif --help: --gpus range and default"
grep -q "default: 0" "$TMP/out" && fail "whatif --help shows a default of 0"
grep -q "default [0-9]" "$TMP/out" && fail "whatif --help: a second default"
expect 0 train --help
tr -s ' \n' ' ' <"$TMP/out" |
  grep -q -- "--steps N optimizer steps (from 1 to 1000000; default: 100)" ||
  fail "train --help: --steps range"

# Directories where a configuration file belongs; empty values.
expect 2 config "$TMP"
want_err "cannot read configuration file $TMP: it is a directory"
expect 2 train --config "$TMP" --steps 1
want_err "it is a directory"
expect 2 whatif "$TMP"
want_err "cannot read scenario $TMP: it is a directory"
expect 2 train --trace "" --steps 1
want_err "--trace: expected a value"

# Outputs are checked before the run: a directory, a missing directory,
# a device; nothing is left behind.
mkdir -p "$TMP/outs"
expect 2 train --trace "$TMP/outs" --steps 1
want_err "--trace: cannot write $TMP/outs: it is a directory"
expect 2 train --metrics "$TMP/none/m.jsonl" --steps 1
want_err "--metrics: cannot write $TMP/none/m.jsonl: directory $TMP/none does not"
expect 2 train --trace /dev/null --mode timing --steps 1
want_err "is not a regular file"
grep -q "^step" "$TMP/out" && fail "train ran before the output check"
expect 2 whatif --csv "$TMP/outs" --steps 1
want_err "--csv: cannot write $TMP/outs: it is a directory"
expect 2 whatif --plot "$TMP/none/p.svg" --vary gpus=2,4 --steps 1
want_err "--plot: cannot write $TMP/none/p.svg: directory"
expect 2 calibrate --backend sim --out "$TMP/outs"
want_err "--out: cannot write $TMP/outs: it is a directory"
ls "$TMP" | grep -q '\.tmp' && fail "a temporary file was left in $TMP"

# --trace-dir is created; traces are written there.
expect 0 whatif --model qwen2.5-0.5b --gpus 2 --seq 256 --steps 1 \
  --trace-dir "$TMP/traces/new"
[ -s "$TMP/traces/new/base.json" ] || fail "--trace-dir: no base.json"

# A .gz trace is gzip.
expect 0 train --mode timing --steps 1 --trace "$TMP/t.json.gz"
gzip -dc "$TMP/t.json.gz" >"$TMP/t.json" || fail "--trace .gz is not gzip"
grep -q '"traceEvents"' "$TMP/t.json" || fail "--trace .gz holds no trace"

# A simulated run says its times are simulated.
expect 0 train --steps 1
sed -n 2p "$TMP/out" | grep -q "^times: simulated (virtual time on h200_sxm" ||
  fail "train: the header does not say the times are simulated"

# A dropped synchronization that cannot matter under the settings says why;
# under settings where it matters, the race detector finds the race.
expect 0 train --steps 2 --drop-sync param-buffer-reuse
want_err "dropping param-buffer-reuse alone changes nothing here: every"
expect 1 train --steps 2 --drop-sync param-buffer-reuse \
  --set zero_optimization.stage3_param_persistence_threshold=0
grep -q "race on 'gathered parameter'" "$TMP/out" || fail "no buffer race"
expect 0 train --steps 2 --drop-sync params-updated-before-gather \
  --set zero_optimization.offload_param.device=cpu \
  --set zero_optimization.stage3_param_persistence_threshold=0 --check-reference
want_err "changes nothing here: with offload_param the host writes"

# Timing mode above 8 ranks simulates rank 0 only, and says so;
# --no-symmetric keeps every rank, and 8 ranks stay as they were.
expect 0 train --ranks 16 --mode timing --steps 1 --trace "$TMP/sym.json"
want_err "notice: above 8 ranks timing mode simulates rank 0 only"
grep -q '"rank 1' "$TMP/sym.json" && fail "symmetric trace has rank 1"
expect 0 train --ranks 16 --mode timing --steps 1 --no-symmetric
grep -q "simulates rank 0 only" "$TMP/err" && fail "note with --no-symmetric"
expect 0 train --ranks 8 --mode timing --steps 1
grep -q "simulates rank 0 only" "$TMP/err" && fail "note at 8 ranks"

# --help takes no value.
expect 2 --help=3
want_err "--help takes no value"
expect 2 train --help=3
want_err "--help takes no value, got --help=3"

finish
