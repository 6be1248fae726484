#!/usr/bin/env bash
# Runs the zero3 binary as a user would: exit codes, and what goes to stdout
# versus stderr.
set -uo pipefail

source tools/cli_test_lib.sh
CONFIGS=testing/testdata/configs

expect 0 --help
grep -q "config" "$TMP/out" || fail "--help does not list the config command"

expect 0 config --help
grep -q -- "--world-size" "$TMP/out" || fail "config --help lacks --world-size"

expect 2
expect 2 bogus
grep -q 'unknown command "bogus"' "$TMP/err" || fail "no message for bogus"
expect 2 config "$CONFIGS/zero3_offload.json" --bogus-flag
grep -q "unknown flag --bogus-flag" "$TMP/err" || fail "no message for flag"

# A valid config: JSON on stdout, nothing but notices on stderr.
for f in zero3_offload.json zero3_offload.textproto legacy_cpu_offload.json \
         hf_zero3_offload_filled.json; do
  expect 0 config "$CONFIGS/$f"
  head -c 1 "$TMP/out" | grep -q '{' || fail "$f: stdout is not JSON"
  if grep -v '^notice: ' "$TMP/err" | grep -q .; then
    fail "$f: stderr has more than notices"
  fi
done

# The legacy opt-out survives: pin_memory false in the printed config.
expect 0 config "$CONFIGS/legacy_cpu_offload.json"
grep -A3 '"offload_optimizer"' "$TMP/out" | grep -q '"pin_memory": false' ||
  fail "legacy config: offload_optimizer.pin_memory is not false"

# An invalid config: nothing on stdout, every error on stderr.
expect 2 config "$CONFIGS/hf_zero3_offload.json"
[ -s "$TMP/out" ] && fail "invalid config: stdout is not empty"
# (the 11 "auto" keys zero3 config has no value for: the model's, the
# flags' of zero3 train, and fp16/bf16, which need --set)
[ "$(grep -c '^error: ' "$TMP/err")" -eq 11 ] ||
  fail "invalid config: want 11 error lines, got $(grep -c '^error: ' "$TMP/err")"

# Malformed JSON: line and column.
printf '{\n  "zero_optimization": {\n    "stage": 3\n    "x": 1\n  }\n}\n' \
  >"$TMP/bad.json"
expect 2 config "$TMP/bad.json"
grep -q "^error: $TMP/bad.json: line 4, column 5: expected ',' or '}'" "$TMP/err" ||
  fail "malformed JSON: no line and column"

# The data-parallel size takes part in the batch check.
expect 2 config "$CONFIGS/hf_zero3_offload_filled.json" --world-size 2
expect 0 config "$CONFIGS/hf_zero3_offload_filled.json" --world-size 2 \
  --set train_batch_size=32

# zero3 train: the default run (tiny model, 2 simulated ranks, CPU offload).
expect 0 train --steps 3
grep -q "^step 3/3  loss " "$TMP/out" || fail "train: no step lines"
grep -q "start-up: pinned host memory" "$TMP/out" || fail "train: no start-up pinned line"
grep -q "race detector: 0 races found" "$TMP/out" || fail "train: races in the default run"

expect 0 train --drop-sync list
grep -q "^grad-offload-before-step" "$TMP/out" || fail "drop-sync list lacks grad-offload-before-step"

# Dropping the pre-step synchronization: the race report names the host
# gradient buffer and the D2H copy, and the exit status says so.
expect 1 train --steps 2 --drop-sync grad-offload-before-step
grep -q "race on 'host gradients.*grad D2H" "$TMP/out" ||
  fail "drop-sync: no report naming the host gradients and the D2H copy"

expect 2 train --drop-sync grad-offload-befor-step
grep -q "did you mean 'grad-offload-before-step'" "$TMP/err" || fail "drop-sync: no suggestion"

expect 0 train --steps 3 --ranks 3 --check-reference
grep -q "check-reference: largest relative difference .* OK" "$TMP/out" ||
  fail "check-reference did not pass"

expect 0 train --model qwen2.5-0.5b --ranks 4 --mode timing --steps 1 --seq 256 \
  --trace "$TMP/trace.json"
grep -q '"traceEvents"' "$TMP/trace.json" || fail "no trace written"

# Activation checkpointing: the recompute runs (and checks out in data mode).
expect 0 train --model qwen2.5-0.5b --mode timing --steps 1 --seq 256 \
  --gradient-checkpointing --trace "$TMP/trace.json"
grep -q 'L3 recompute' "$TMP/trace.json" || fail "no recompute in the trace"
expect 0 train --steps 2 --gradient-checkpointing --check-reference

# The LM head in chunks: against the reference trainer, and in whatif.
expect 0 train --steps 3 --set zero3.lm_head_chunk_tokens=5 --check-reference
expect 0 whatif --model qwen2.5-0.5b --gpus 1 --seq 2048 --micro-batch 8 \
  --steps 2 --vary zero3.lm_head_chunk_tokens=0,4096
grep -q "^lm_head_chunk_tokens=4096 " "$TMP/out" || fail "whatif: no chunked head"
# --gradient-checkpointing chunks the head where that takes less memory
# (16,384 tokens here), not where --set says otherwise.
expect 0 train --model qwen2.5-0.5b --mode timing --steps 1 --seq 4096 \
  --data synthetic --gradient-checkpointing
grep -q "LM head on chunks of 4096 tokens" "$TMP/err" || fail "no head chunks"
expect 0 train --model qwen2.5-0.5b --mode timing --steps 1 --seq 4096 \
  --data synthetic --gradient-checkpointing --set zero3.lm_head_chunk_tokens=0
if grep -q "LM head on chunks" "$TMP/err"; then fail "head chunked despite 0"; fi

expect 2 train --mode timing --check-reference
expect 2 train --model nonexistent

# zero3 whatif: a shipped scenario, JSON with the documented shape, errors.
expect 0 whatif tools/whatif/scenarios/offload_pcie4_tp2_1.5b.textproto --steps 2
grep -q "change against the baseline" "$TMP/out" || fail "whatif: no deltas"
# When the host's AdamW runs: the delayed update wins, and the fastest line
# says it changes the training.
expect 0 whatif tools/whatif/scenarios/host_step_h200_1.5b.textproto --steps 2
grep -q "^fastest that fits: host_step_overlap=delayed .*it changes the training" \
  "$TMP/out" || fail "whatif: the delayed update is not marked"
grep -q "^fastest exact that fits: host_step_overlap=forward super_offload=true " \
  "$TMP/out" || fail "whatif: no fastest exact variant"
# super_offload runs what its speculation has not reached under the next
# forward (its default zero3.host_step_overlap), and says how much.
expect 0 train --mode timing --model qwen2.5-1.5b --ranks 1 --seq 2048 \
  --data synthetic --steps 2 --set bf16.enabled=true \
  --set train_micro_batch_size_per_gpu=4 --set gradient_clipping=0 \
  --set zero_optimization.offload_optimizer.super_offload=true
grep -q "speculative step committed ([0-9]* pieces under the next forward)" \
  "$TMP/out" || fail "train: no pieces under the next forward"
expect 0 whatif --model qwen2.5-0.5b --gpus 2 --seq 256 --steps 2 \
  --vary zero3.grad_offload=blocking,async --format json --csv "$TMP/w.csv"
grep -q '"settings": {"zero3.grad_offload": "async"}' "$TMP/out" || fail "whatif json lacks settings"
grep -q '"bwd_ms"' "$TMP/out" || fail "whatif json lacks bwd_ms"
grep -q "^zero3.grad_offload,fwd_ms" "$TMP/w.csv" || fail "whatif csv header"
expect 0 whatif --model qwen2.5-0.5b --gpus 2 --explain
grep -q "kernel (matmul)" "$TMP/out" || fail "whatif --explain"
expect 0 whatif --model qwen2.5-0.5b --gpus 1 --seq 256 --steps 1 \
  --set hardware.gpu.memory_gib=8 --vary micro_batch=1,512
grep -q "micro_batch=512 *does not fit: needs" "$TMP/out" || fail "whatif: no does-not-fit row"
grep -q "^fastest that fits: micro_batch=1 " "$TMP/out" || fail "whatif: no fastest line"
expect 1 whatif --model qwen2.5-0.5b --gpus 1 --seq 256 --steps 1 \
  --set hardware.gpu.memory_gib=8 --vary micro_batch=512,1024
grep -q "no variant fits" "$TMP/err" || fail "whatif: none fits, no error"
expect 2 whatif --vary zero_optimization.reduce_bucket_sise=1
grep -q "reduce_bucket_size" "$TMP/err" || fail "whatif: bad key not named"
expect 2 whatif --hardware h300

# Token files: the shipped one trains as README shows; data mistakes exit 2
# naming the file.
TOKENS=testing/testdata/tokens/tiny_corpus_u16.bin
TEXT=testing/testdata/text/corpus.txt
expect 0 train --data "$TOKENS" --data-dtype uint16 --steps 3
[ "$(grep -cE '^step [0-9]/3  loss [0-9]+\.[0-9]{4} ' "$TMP/out")" -eq 3 ] ||
  fail "want 3 step lines with a loss"
grep -q "^data: token file $TOKENS (uint16, 3308 tokens" "$TMP/out" ||
  fail "no data line naming the token file"

# The same samples reach the unsharded reference.
expect 0 train --data "$TOKENS" --ranks 4 --steps 2 --check-reference
grep -q "check-reference: .*: OK" "$TMP/out" || fail "check-reference not OK"

# Read as uint32, the byte tokens pair up into ids past the vocabulary.
expect 2 train --data "$TOKENS" --data-dtype uint32 --steps 1
grep -q "$TOKENS: token id [0-9]* at byte offset [0-9]* is outside" \
  "$TMP/err" || fail "no error naming the bad id's offset"

expect 2 train --data "$TEXT" --data-dtype uint16 --steps 1
grep -q "$TEXT looks like text" "$TMP/err" || fail "text given a dtype"

expect 2 train --data-dtype uint16 --steps 1
grep -q "applies to token files" "$TMP/err" || fail "dtype for the corpus"

expect 2 train --data "$TOKENS" --data-dtype int8 --steps 1
grep -q "must be uint16 or uint32, got 'int8'" "$TMP/err" ||
  fail "bad --data-dtype value"

expect 2 train --data "$TOKENS" --seq 4096 --steps 1
grep -q "$TOKENS holds 3308 tokens, too few" "$TMP/err" || fail "too small"

# In file order: the data line says so; not for the built-in data.
expect 0 train --data "$TOKENS" --data-in-order --steps 2
grep -q "in file order" "$TMP/out" || fail "data line lacks the order"
expect 2 train --data-in-order --steps 1
grep -q "data-in-order applies to token files" "$TMP/err" ||
  fail "--data-in-order for the corpus"

expect 2 train --data "$TMP/none.bin" --steps 1
grep -q "cannot open $TMP/none.bin" "$TMP/err" || fail "missing file"

# A Hugging Face checkpoint directory: loss lines; a damaged one: exit 2
# naming the file and the tensor.
HF=testing/testdata/hf
expect 0 train --model "$HF/qwen2_tied" --steps 3 --seq 16
[ "$(grep -c "^step [1-3]/3  loss 4\.[0-9]" "$TMP/out")" -eq 3 ] ||
  fail "train --model DIR: no loss lines"
grep -q -- "--model NAME|FILE|DIR" <("$ZERO3" train --help) ||
  fail "train --help does not mention DIR"
mkdir -p "$TMP/cut"
cp "$HF/qwen2_untied/config.json" "$TMP/cut/"
head -c 50000 "$HF/qwen2_untied/model.safetensors" >"$TMP/cut/model.safetensors"
expect 2 train --model "$TMP/cut" --steps 1
grep -q "cut/model.safetensors: not a valid safetensors file: tensor '" \
  "$TMP/err" || fail "truncated checkpoint: file and tensor not named"

# README's end-to-end run: checkpoint, token file, WarmupLR, metrics.
expect 0 train --model "$HF/qwen2_bytes" --data "$TOKENS" --data-dtype uint16 \
  --config "$CONFIGS/warmup_offload.json" --steps 30 --metrics "$TMP/m.jsonl"
[ "$(grep -c '^step' "$TMP/out")" -eq 6 ] || fail "README run: want 6 lines"
[ "$(wc -l <"$TMP/m.jsonl")" -eq 30 ] || fail "README run: want 30 metrics"
grep -q '"step": 30, .*"lr": 0.003,' "$TMP/m.jsonl" || fail "README run: lr"

finish
