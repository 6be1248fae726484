#!/usr/bin/env python3
"""Trains the same checkpoint on the same tokens with zero3 and with PyTorch
and compares the loss curves step by step.

Makes a Qwen2.5-0.5B-shaped checkpoint with random weights (transformers,
fp32 safetensors) and a token file of a seeded low-entropy token stream (so
that the loss falls), then runs
  - zero3 train --backend cuda --model CKPT --data TOKENS (bf16, the optimizer
    offloaded to the host, --data-in-order: step s trains on samples
    s*B .. s*B+B-1, sample k being tokens k*seq .. k*seq+seq), writing
    --metrics;
  - PyTorch: the same windows in the same order, fp32 weights with bf16
    autocast, torch.optim.AdamW(fused=True) with the same settings, gradient
    clipping at 1.0 (DeepSpeed's default, which zero3 keeps);
and prints both losses and their relative difference per step, and writes
them as JSON. Exits 1 if any step differs by more than --tolerance.

    python3 tools/oracle/compare_training.py --zero3 ./zero3 --work /tmp/cmp
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loss_curves  # noqa: E402


def make_checkpoint(path):
    config = transformers.Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True,
        use_sliding_window=False)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(path, safe_serialization=True)
    return config


def make_tokens(path, count, seed=0):
    """A stream over 4096 token ids where each token has 4 likely
    successors: learnable bigram statistics, entropy about 2 nats."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(151936, size=4096, replace=False).astype(np.uint32)
    succ = rng.integers(0, 4096, size=(4096, 4))
    out = np.empty(count, dtype=np.uint32)
    state = 0
    draws = rng.integers(0, 4, size=count)
    noise = rng.random(count) < 0.1
    jumps = rng.integers(0, 4096, size=count)
    for i in range(count):
        state = jumps[i] if noise[i] else succ[state, draws[i]]
        out[i] = ids[state]
    out.tofile(path)
    return out


def run_zero3(args, ckpt, tokens, metrics):
    cmd = [args.zero3, "train", "--backend", "cuda", "--model", ckpt,
           "--data", tokens, "--data-dtype", "uint32", "--data-in-order",
           "--seq", str(args.seq), "--steps", str(args.steps),
           "--metrics", metrics,
           "--set", "bf16.enabled=true",
           "--set", f"train_micro_batch_size_per_gpu={args.batch}",
           "--set", f"optimizer.params.lr={args.lr}",
           "--set", f"optimizer.params.weight_decay={args.weight_decay}"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def run_torch(args, ckpt, stream):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        ckpt, dtype=torch.float32).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr,
                            betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=args.weight_decay, fused=True)
    seq = args.seq
    losses = []
    for step in range(args.steps):
        first = step * args.batch
        # Sample k: tokens k*seq .. k*seq + seq (docs/data.md).
        batch = np.stack([stream[(first + b) * seq:(first + b + 1) * seq + 1]
                          for b in range(args.batch)]).astype(np.int64)
        batch = torch.from_numpy(batch).cuda()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]),
            batch[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zero3", required=True, help="the zero3 binary")
    p.add_argument("--work", required=True, help="folder for the files")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--tolerance", type=float, default=0.02)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, "qwen2.5-0.5b-random")
    tokens = os.path.join(args.work, "tokens_u32.bin")
    make_checkpoint(ckpt)
    stream = make_tokens(tokens, args.steps * args.batch * args.seq + 1)
    ours = run_zero3(args, ckpt, tokens, os.path.join(args.work, "m.jsonl"))
    theirs = run_torch(args, ckpt, stream)
    return loss_curves.report(
        ours, theirs, args, "",
        {"torch": torch.__version__, "transformers": transformers.__version__})


if __name__ == "__main__":
    sys.exit(main())
