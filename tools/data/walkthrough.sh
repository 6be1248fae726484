#!/usr/bin/env bash
# Copyright 2026 The zero3 Authors.
# The fine-tuning walkthrough of docs/data.md, end to end:
#   chats (JSONL) -> tools/data/prepare -> zero3 train (answers only, with
#   held-out evaluation) -> zero3 export -> transformers loads it and
#   answers (when $TORCH_PYTHON has torch and transformers).
#
#   tools/data/walkthrough.sh [OUT] [STEPS]
#
# Environment: ZERO3 (default bazel-bin/tools/zero3, built with
# `bazel build -c opt //tools:zero3`), ZERO3_PYENV (tools/setup.sh's
# environment), TORCH_PYTHON (a python3 with torch and transformers;
# without one the last step is skipped and says so).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${TMPDIR:-/tmp}/zero3-walkthrough}"
steps="${2:-600}"
zero3="${ZERO3:-bazel-bin/tools/zero3}"
env="${ZERO3_PYENV:-${HOME:-/nonexistent}/.cache/zero3/pyenv}"
if [ ! -x "$zero3" ]; then
  echo "walkthrough: no zero3 binary at $zero3: run 'bazel build -c opt //tools:zero3' or set ZERO3" >&2
  exit 2
fi
if [ ! -x "$env/bin/python" ]; then
  echo "walkthrough: no Python environment at $env: run tools/setup.sh" >&2
  exit 2
fi
if [ -e "$out/checkpoints" ]; then
  echo "walkthrough: $out already holds a run; remove it or name another folder" >&2
  exit 2
fi

echo "== 1. inputs: a tiny Qwen2 model folder and chats"
"$env/bin/python" "$here/walkthrough_setup.py" "$out"

echo "== 2. tokenize with the model's chat template; only answers predicted"
mkdir -p "$out/data"
"$here/prepare" --model "$out/model" --input "$out/train.jsonl" --out "$out/data/train"
"$here/prepare" --model "$out/model" --input "$out/eval.jsonl" --out "$out/data/eval"

echo "== 3. fine-tune: one chat per sample, loss on the answers, evaluation every 50 steps"
"$zero3" train --model "$out/model/config.json" --data "$out/data/train" \
  --eval-data "$out/data/eval" --eval-interval 50 --eval-iters 10 \
  --steps "$steps" --seq 64 --micro-batch 16 --lr 3e-3 --ranks 2 \
  --metrics "$out/metrics.jsonl" --save "$out/checkpoints" --races off

echo "== 4. export for transformers"
"$zero3" export --checkpoint "$out/checkpoints" --out "$out/exported"
cp "$out/model/"tokenizer* "$out/model/chat_template.jinja" "$out/exported/"

echo "== 5. answer held-out chats with transformers"
torch_python="${TORCH_PYTHON:-python3}"
if "$torch_python" -c "import torch, transformers" 2>/dev/null; then
  "$torch_python" "$here/walkthrough_generate.py" "$out/exported" "$out/eval.jsonl"
else
  echo "skipped: $torch_python has no torch and transformers (set TORCH_PYTHON)"
fi
