#!/usr/bin/env python3
"""Checks that zero3's export of each model family is what transformers
loads, with the loss zero3 computes on the same weights.

For each checkpoint directory given (default: the oracle checkpoints of
testing/testdata/hf), on the simulator in fp32:
  1. zero3 train --model DIR --steps 2 --save CKPT (the weights move away
     from the file's, so the export is not a copy of the input);
  2. zero3 export --checkpoint CKPT --out EXPORT;
  3. zero3 train --model EXPORT --steps 1 --metrics M: zero3's loss of the
     exported weights on the first batch (--data-in-order: sample k is
     tokens k*seq .. k*seq + seq);
  4. transformers' AutoModelForCausalLM.from_pretrained(EXPORT), the loss of
     the same batch.
Prints both losses and exits 1 if any pair differs by more than
--tolerance (relative; fp32 on a CPU agrees to about 1e-7).

    python3 tools/oracle/check_export.py --zero3 bazel-bin/tools/zero3 \\
        --work /tmp/export_check
"""

import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

SEQ = 16
BATCH = 2


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def zero3_loss(args, model, tokens, metrics):
    run([args.zero3, "train", "--model", model, "--data", tokens,
         "--data-dtype", "uint16", "--data-in-order", "--ranks", "1",
         "--seq", str(SEQ), "--steps", "1", "--metrics", metrics,
         "--set", f"train_micro_batch_size_per_gpu={BATCH}"])
    with open(metrics) as f:
        return json.loads(f.readline())["loss"]


def torch_loss(export, stream):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        export, dtype=torch.float32)
    batch = np.stack([stream[b * SEQ:(b + 1) * SEQ + 1]
                      for b in range(BATCH)]).astype(np.int64)
    batch = torch.from_numpy(batch)
    with torch.no_grad():
        logits = model(input_ids=batch[:, :-1]).logits
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)).item()


def check(args, src):
    name = os.path.basename(os.path.normpath(src))
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    stream = np.random.default_rng(7).integers(
        0, vocab, size=8 * BATCH * SEQ + 1).astype(np.uint16)
    tokens = os.path.join(work, "tokens.bin")
    stream.tofile(tokens)
    ckpt = os.path.join(work, "ckpt")
    export = os.path.join(work, "export")
    run([args.zero3, "train", "--model", src, "--data", tokens,
         "--data-dtype", "uint16", "--data-in-order", "--ranks", "2",
         "--seq", str(SEQ), "--steps", "2", "--save", ckpt,
         "--set", f"train_micro_batch_size_per_gpu={BATCH // 2}"])
    run([args.zero3, "export", "--checkpoint", ckpt, "--out", export])
    ours = zero3_loss(args, export, tokens, os.path.join(work, "m.jsonl"))
    theirs = torch_loss(export, stream)
    rel = abs(ours - theirs) / abs(theirs)
    print(f"{name:14s} zero3 {ours:.7f}  transformers {theirs:.7f}  "
          f"relative {rel:.1e}", flush=True)
    return rel <= args.tolerance


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero3", required=True, help="the zero3 binary")
    parser.add_argument("--work", required=True, help="scratch folder")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("dirs", nargs="*", help="checkpoint directories")
    args = parser.parse_args()
    dirs = args.dirs or sorted(
        d for d in glob.glob("testing/testdata/hf/*") if os.path.isdir(d))
    ok = [check(args, d) for d in dirs]
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
