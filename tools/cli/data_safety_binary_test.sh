#!/usr/bin/env bash
# Nothing a user does loses data: each repro of a run or export that once
# destroyed an input, mixed two runs' checkpoints, crashed on a checkpoint's
# contents or left files behind now exits 2 with a line that says why, its
# inputs unchanged and nothing left behind.
set -uo pipefail

source tools/cli_test_lib.sh

# An output that is an input: the data stays as it was.
head -c 4096 /dev/urandom >"$TMP/d.bin"
before="$(md5sum <"$TMP/d.bin")"
expect 2 train --data "$TMP/d.bin" --data-dtype uint16 --metrics "$TMP/d.bin" --steps 1
grep -q "destroy that input" "$TMP/err" || fail "--metrics = --data: no reason"
[ "$(md5sum <"$TMP/d.bin")" = "$before" ] || fail "--metrics = --data: data changed"
expect 2 train --metrics "$TMP/m.jsonl" --trace "$TMP/m.jsonl" --steps 1
grep -q "mix two outputs" "$TMP/err" || fail "--trace = --metrics: no reason"

# Two runs saving into one directory: the second is refused, naming the
# first, whose checkpoints stay its own.
"$ZERO3" train --steps 100000 --save "$TMP/runs" --save-interval 50000 \
  >"$TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 300); do [ -e "$TMP/runs/.zero3.lock" ] && break; sleep 0.1; done
sleep 0.5
expect 2 train --steps 4 --save "$TMP/runs" --save-interval 2 --seed 2
grep -q "is in use by another run (pid $first" "$TMP/err" ||
  fail "second run: holder not named"
kill -TERM "$first"
wait "$first"
ls "$TMP/runs" | grep -q "step_2$" && fail "second run saved into the first's directory"

# A killed save's temporary shard is removed when a run takes the directory.
mkdir -p "$TMP/left/step_9"
head -c 1000 /dev/zero >"$TMP/left/step_9/rank_00000.safetensors.tmp.AbC123"
expect 0 train --steps 2 --save "$TMP/left"
ls "$TMP/left/step_9" | grep -q tmp && fail "leftover temporary file kept"

# A forged manifest: exit 2 naming the field, never a crash.
expect 0 train --steps 2 --save "$TMP/ck"
sed 's/"step": 2/"step": -6/' "$TMP/ck/step_2/manifest.json" >"$TMP/m.json" &&
  cp "$TMP/m.json" "$TMP/ck/step_2/manifest.json"
expect 2 train --steps 4 --resume "$TMP/ck"
grep -q "'step' is -6" "$TMP/err" || fail "forged step: field not named"
expect 2 export --checkpoint "$TMP/ck" --out "$TMP/never"
[ -e "$TMP/never" ] && fail "failed export left a directory"

# Export: a non-empty directory only with --overwrite, the user's other
# files kept; files as the umask says.
expect 0 train --steps 2 --save "$TMP/good"
mkdir -p "$TMP/hf" && echo '{}' >"$TMP/hf/tokenizer.json"
expect 2 export --checkpoint "$TMP/good" --out "$TMP/hf"
grep -q "is not empty" "$TMP/err" || fail "export into a full directory: no reason"
(umask 022 && "$ZERO3" export --checkpoint "$TMP/good" --out "$TMP/hf" --overwrite \
  >"$TMP/out" 2>"$TMP/err") || fail "export --overwrite failed"
[ -s "$TMP/hf/tokenizer.json" ] || fail "export --overwrite removed the tokenizer"
[ "$(stat -c %a "$TMP/hf/model.safetensors")" = 644 ] ||
  fail "exported weights not 0644 under umask 022"
expect 2 export --checkpoint "$TMP/good" --out "$TMP/good"
grep -q "is the same file as --checkpoint" "$TMP/err" ||
  fail "export into its checkpoint: no reason"

finish
