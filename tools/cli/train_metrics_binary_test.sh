#!/usr/bin/env bash
# `zero3 train` writing metrics as a user runs it: --metrics in data and
# timing mode, DeepSpeed's csv_monitor, tensorboard and steps_per_print, and
# the errors for paths that cannot be written.
set -uo pipefail

source tools/cli_test_lib.sh

# Data mode: one line per step, each with a numeric loss, lr and step.
expect 0 train --steps 3 --metrics "$TMP/m.jsonl"
[ "$(wc -l <"$TMP/m.jsonl")" -eq 3 ] || fail "want 3 lines in m.jsonl"
for s in 1 2 3; do
  sed -n "${s}p" "$TMP/m.jsonl" | grep -q "^{\"step\": $s, " ||
    fail "line $s is not step $s"
done
grep -q '"loss": [0-9]' "$TMP/m.jsonl" || fail "no loss in data mode"
grep -q '"lr": 0.001,' "$TMP/m.jsonl" || fail "lr is not the configured 1e-3"
grep -q '"mfu": [0-9]' "$TMP/m.jsonl" || fail "no mfu"
grep -q '"pinned_host_bytes": [1-9]' "$TMP/m.jsonl" || fail "no pinned bytes"
# The console is unchanged: every step is printed.
[ "$(grep -c '^step ' "$TMP/out")" -eq 3 ] || fail "want 3 step lines"

# Timing mode: the loss is null.
expect 0 train --model qwen2.5-0.5b --ranks 2 --mode timing --steps 2 \
  --seq 512 --symmetric --set bf16.enabled=true --metrics "$TMP/t.jsonl"
[ "$(grep -c '"loss": null' "$TMP/t.jsonl")" -eq 2 ] ||
  fail "timing mode: want a null loss on both lines"
# The step's bound: on every line, and with the reached share at the end.
[ "$(grep -c '"bound_ms": [1-9]' "$TMP/t.jsonl")" -eq 2 ] ||
  fail "timing mode: want the bound on both lines"
grep -q '"bound_reached": 0\.[0-9]' "$TMP/t.jsonl" ||
  fail "the bound's share of the step is not in (0, 1)"
grep -q '^bound: [0-9.]* ms a step on h200_sxm (device .*); steps 2-2 took [0-9.]* ms on average, [0-9]*% of the bound' \
  "$TMP/out" || fail "no bound line at the end"

# DeepSpeed's sections and steps_per_print.
cat >"$TMP/ds.json" <<JSON
{
  "train_micro_batch_size_per_gpu": 4,
  "steps_per_print": 2,
  "zero_optimization": {"offload_optimizer": {"device": "cpu"}},
  "csv_monitor": {"enabled": true, "output_path": "$TMP/csv", "job_name": "j"},
  "tensorboard": {"enabled": true, "output_path": "$TMP/tb/", "job_name": "j"}
}
JSON
expect 0 train --steps 5 --config "$TMP/ds.json"
[ "$(grep -c '^step ' "$TMP/out")" -eq 2 ] || fail "steps_per_print 2: want 2 step lines"
grep -q '^step 4/5 ' "$TMP/out" || fail "steps_per_print 2: no line for step 4"
grep -q "tensorboard\|csv_monitor" "$TMP/err" && fail "a notice about the monitors"
loss="$TMP/csv/j/Train_Samples_train_loss.csv"
[ "$(head -1 "$loss")" = $'step,train_loss\r' ] || fail "$loss: bad header"
[ "$(wc -l <"$loss")" -eq 6 ] || fail "$loss: want a header and 5 rows"
sed -n 2p "$loss" | grep -q '^0,5\.' || fail "$loss: first row is not 0,<loss>"
sed -n 3p "$TMP/csv/j/Train_Samples_lr.csv" | grep -q $'^16,0.001\r$' ||
  fail "lr.csv: second row is not 16,0.001"
ls "$TMP"/tb/j/events.out.tfevents.* >/dev/null 2>&1 || fail "no event file"

# Paths that cannot be written: exit 2 before any step, naming the path.
expect 2 train --steps 2 --metrics "$TMP/no/such/dir/m.jsonl"
grep -q "error: --metrics: cannot write $TMP/no/such/dir/m.jsonl" "$TMP/err" ||
  fail "the --metrics error does not name the path"
grep -q '^step ' "$TMP/out" && fail "a step ran before the --metrics error"
: >"$TMP/file"
expect 2 train --steps 2 --set tensorboard.enabled=true \
  --set tensorboard.output_path="$TMP/file"
grep -q "error: tensorboard: cannot create directory $TMP/file/DeepSpeedJobName" \
  "$TMP/err" || fail "the tensorboard error does not name the directory"

finish
