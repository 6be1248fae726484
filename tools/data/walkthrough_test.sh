#!/usr/bin/env bash
# The fine-tuning walkthrough (tools/data/walkthrough.sh, docs/data.md) end
# to end, short: 20 steps, transformers' generation skipped. Checks that
# each stage leaves what the next reads: the prepared files, evaluation
# lines, metrics with predicted tokens and eval_loss, an exported model.
set -euo pipefail
here="$(dirname "$(readlink -f "$0")")"
export ZERO3="$PWD/tools/zero3"
export TORCH_PYTHON=/nonexistent
out="${TEST_TMPDIR:-/tmp}/walkthrough"
log="${TEST_TMPDIR:-/tmp}/walkthrough.log"
if ! "$here/walkthrough.sh" "$out" 20 >"$log" 2>&1; then
  cat "$log"
  echo "walkthrough_test: the walkthrough failed" >&2
  exit 1
fi
fail() { cat "$log"; echo "walkthrough_test: $*" >&2; exit 1; }
for f in data/train.bin data/train.idx data/train.loss_mask.bin \
         data/eval.loss_mask.bin exported/model.safetensors \
         exported/config.json exported/tokenizer.json; do
  [ -s "$out/$f" ] || fail "missing $out/$f"
done
grep -q "^eval 20/20  eval_loss [0-9]" "$log" || fail "no evaluation after the last step"
grep -q "^skipped: /nonexistent has no torch" "$log" || fail "generation not skipped"
python3 - "$out/metrics.jsonl" <<'PY' || fail "metrics"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 20, len(lines)
assert all(0 < l["predicted_tokens"] < l["tokens"] for l in lines)
assert lines[-1]["eval_loss"] is not None and lines[0]["eval_loss"] is None
PY
echo "walkthrough_test: ok"
