#!/usr/bin/env bash
# `zero3 train --save/--resume` as a user runs it: 6 steps straight against
# 3 steps saved and resumed to 6 (steps 4-6 identical), keep-last, and the
# errors for damaged checkpoints and unwritable directories.
set -uo pipefail

source tools/cli_test_lib.sh

# Each step's values, without the times (the resumed run's first step is
# timed cold).
values() {
  grep -o '"step": [0-9]*\|"loss": [^,]*\|"lr": [^,]*\|"grad_norm": [^,]*\|"loss_scale": [^,]*' "$1" |
    paste -d' ' - - - - -
}

expect 0 train --model tiny --ranks 2 --steps 6 --metrics "$TMP/a.jsonl"
expect 0 train --model tiny --ranks 2 --steps 3 --save "$TMP/ckpt" \
  --save-interval 3
grep -q "^checkpoint: step 3 saved to $TMP/ckpt/step_3$" "$TMP/out" ||
  fail "no line for the save"
[ "$(cat "$TMP/ckpt/latest")" = step_3 ] || fail "latest does not name step_3"
for f in manifest.json rank_00000.safetensors rank_00001.safetensors; do
  [ -s "$TMP/ckpt/step_3/$f" ] || fail "step_3/$f is missing"
done
expect 0 train --model tiny --ranks 2 --steps 6 --resume "$TMP/ckpt" \
  --metrics "$TMP/b.jsonl"
grep -q "^resuming from $TMP/ckpt/step_3 (step 3 of 6)$" "$TMP/out" ||
  fail "no resuming line"
[ "$(grep -c '^step ' "$TMP/out")" -eq 3 ] || fail "want 3 step lines"
grep -q '^step 4/6 ' "$TMP/out" || fail "the first step is not 4/6"
[ "$(wc -l <"$TMP/b.jsonl")" -eq 3 ] || fail "want 3 lines in b.jsonl"
[ "$(values "$TMP/a.jsonl" | tail -3)" = "$(values "$TMP/b.jsonl")" ] ||
  fail "steps 4-6 differ: $(values "$TMP/a.jsonl" | tail -3) vs $(values "$TMP/b.jsonl")"

# --check-reference of a resumed run: the reference starts from the
# checkpoint, so steps 4-6 compare as in the run that was never stopped.
expect 0 train --model tiny --ranks 2 --steps 6 --check-reference
grep '^check step [4-6]:' "$TMP/out" >"$TMP/check_straight"
expect 0 train --model tiny --ranks 2 --steps 6 --resume "$TMP/ckpt" \
  --check-reference
grep -q '^check-reference: .*: OK$' "$TMP/out" || fail "resumed check not OK"
[ "$(grep -c '^check step' "$TMP/out")" -eq 3 ] || fail "want 3 check lines"
diff <(grep '^check step' "$TMP/out") "$TMP/check_straight" >/dev/null ||
  fail "resumed check lines differ from the straight run's"

# The one-step delayed update (which changes the training): saving does not
# change the run (steps 4-6 of a run saved at 3 are those of the run that
# never saved), and a resumed run, whose lag starts afresh from the saved
# state, matches the reference resumed from it on the same lag.
DELAYED=(--set zero3.host_step_overlap=delayed)
expect 0 train --model tiny --ranks 2 --steps 6 "${DELAYED[@]}" \
  --metrics "$TMP/d.jsonl"
expect 0 train --model tiny --ranks 2 --steps 6 "${DELAYED[@]}" \
  --save "$TMP/ckpt_delayed" --save-interval 3 --metrics "$TMP/e.jsonl"
[ "$(values "$TMP/d.jsonl")" = "$(values "$TMP/e.jsonl")" ] ||
  fail "delayed: saving changed the run"
expect 0 train --model tiny --ranks 2 --steps 6 "${DELAYED[@]}" \
  --resume "$TMP/ckpt_delayed/step_3" --check-reference
grep -q '^check-reference: .*: OK$' "$TMP/out" ||
  fail "delayed: resumed check not OK"
[ "$(grep -c '^check step' "$TMP/out")" -eq 3 ] || fail "want 3 check lines"

# The same checkpoint on 4 ranks with half the micro-batch (the same global
# batch): each loss within 1e-5 of the 2-rank run's.
expect 0 train --model tiny --ranks 4 --micro-batch 2 --steps 6 \
  --resume "$TMP/ckpt" --metrics "$TMP/c.jsonl"
losses() { grep -o '"loss": [^,]*' "$1" | cut -d' ' -f2; }
paste <(losses "$TMP/a.jsonl" | tail -3) <(losses "$TMP/c.jsonl") |
  awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > 1e-5) bad = 1 }
       END { exit bad }' ||
  fail "4 ranks: losses beyond 1e-5: $(losses "$TMP/c.jsonl" | tr '\n' ' ')"
[ "$(wc -l <"$TMP/c.jsonl")" -eq 3 ] || fail "want 3 lines in c.jsonl"

# The checkpoint as a Hugging Face directory, which train loads as a model.
expect 0 export --checkpoint "$TMP/ckpt" --out "$TMP/hf"
grep -q "^exported $TMP/ckpt/step_3 (step 3, .* tensors, fp32) to $TMP/hf$" \
  "$TMP/out" || fail "no line for the export"
grep -q '"architectures": \["Qwen2ForCausalLM"\]' "$TMP/hf/config.json" ||
  fail "config.json is not Qwen2's"
[ -s "$TMP/hf/model.safetensors" ] || fail "no model.safetensors"
expect 0 train --model "$TMP/hf" --ranks 2 --steps 1
grep -q '^step 1/1  loss 5\.' "$TMP/out" || fail "the export does not train"
expect 0 export --checkpoint "$TMP/ckpt/step_3" --out "$TMP/hf16" --dtype bf16
grep -q '"torch_dtype": "bfloat16"' "$TMP/hf16/config.json" ||
  fail "the bf16 export's config.json does not say bfloat16"

# A step directory, saving on with keep-last 1: only step_5 stays.
expect 0 train --model tiny --ranks 2 --steps 5 --resume "$TMP/ckpt/step_3" \
  --save "$TMP/ckpt" --save-interval 1 --keep-last 1
[ "$(ls "$TMP/ckpt" | grep -c '^step_')" -eq 1 ] || fail "keep-last 1 kept more"
[ "$(cat "$TMP/ckpt/latest")" = step_5 ] || fail "latest does not name step_5"

# Nothing left to train; another global batch; a damaged shard: exit 2
# naming the file, before any step.
expect 2 train --model tiny --ranks 2 --steps 5 --resume "$TMP/ckpt"
grep -q "nothing left to train" "$TMP/err" || fail "no 'nothing left' error"
expect 2 train --model tiny --ranks 4 --steps 6 --resume "$TMP/ckpt"
grep -q "$TMP/ckpt/step_5/manifest.json: saved with a global batch of 8 sequences" \
  "$TMP/err" || fail "the global-batch error does not name the manifest"
shard="$TMP/ckpt/step_5/rank_00001.safetensors"
printf 'X' | dd of="$shard" bs=1 seek=200 conv=notrunc 2>/dev/null
expect 2 train --model tiny --ranks 2 --steps 6 --resume "$TMP/ckpt"
grep -q "checkpoint file $shard is corrupted" "$TMP/err" ||
  fail "the corrupted shard is not named"
grep -q '^step ' "$TMP/out" && fail "a step ran before the checksum error"

# A save directory whose parent is missing: exit 2 naming it, before any
# step.
expect 2 train --model tiny --ranks 2 --steps 1 --save "$TMP/no/such/ckpt"
grep -q "cannot create checkpoint directory $TMP/no/such/ckpt" "$TMP/err" ||
  fail "the save error does not name the directory"
grep -q '^step ' "$TMP/out" && fail "a step ran before the save error"

# A run that would overwrite a checkpoint it saves says so before its first
# step; one that saves only other steps into the same directory runs.
mkdir -p "$TMP/again"
expect 0 train --model tiny --ranks 2 --steps 2 --save "$TMP/again"
expect 2 train --model tiny --ranks 2 --steps 4 --save "$TMP/again" \
  --save-interval 2
grep -q "would save step 2 but .*step_2/manifest.json exists already" \
  "$TMP/err" || fail "the colliding step is not named"
grep -q '^step ' "$TMP/out" && fail "a step ran before the collision error"
expect 0 train --model tiny --ranks 2 --steps 4 --save "$TMP/again" \
  --resume "$TMP/again"

# What saving every 10 steps would cost, async against blocking.
expect 0 whatif --model tiny --gpus 2 --steps 2 --save-interval 10 \
  --vary zero3.checkpoint_write=async,blocking
grep -q '^checkpoint every 10 steps:$' "$TMP/out" ||
  fail "whatif --save-interval: no checkpoint table"
for mode in async blocking; do
  grep -Eq "^checkpoint_write=$mode .* $mode +[0-9.]+ " "$TMP/out" ||
    fail "whatif --save-interval: no $mode row"
done
expect 0 whatif --model tiny --gpus 2 --steps 2 --save-interval 10 \
  --format json
grep -q '"checkpoint_interval": 10, "checkpoint_async": 1, "checkpoint_snapshot_ms": ' \
  "$TMP/out" || fail "whatif --save-interval: no checkpoint figures in JSON"

# Flags that need another.
expect 2 train --steps 2 --save-interval 1
grep -q -- "--save-interval applies to --save DIR" "$TMP/err" ||
  fail "no error for --save-interval alone"
finish
