#!/usr/bin/env python3
"""Fine-tunes the same checkpoint on the same chats with zero3 and with
PyTorch, loss on the answers only, and compares the loss curves step by step.

Makes, in --work:
  - model/: a ChatML tokenizer (tools/data/prepare_test.py's) and a
    checkpoint of the chosen family with random weights (transformers, fp32
    safetensors): the layers of Qwen2.5-0.5B, Qwen3-0.6B or Llama-3.2-1B
    (its llama3 RoPE scaling too), with the tokenizer's vocabulary;
  - train.jsonl: chats in the `messages` format (a user asks for a list of
    digits reversed, the assistant answers), of varied lengths;
  - data/train.*: tools/data/prepare's tokens and loss mask;
then trains
  - zero3: train --backend cuda --data data/train --data-in-order
    --data-packing pad|pack, the optimizer on the host;
  - PyTorch + transformers: the same examples in the same samples and order
    (docs/data.md: one example a sample, or packed in file order while they
    fit, each attending only to itself), torch.optim.AdamW(fused=True) with
    the same settings, clip_grad_norm_ 1.0, the loss summed over the
    predicted tokens and divided by their count in the batch (transformers'
    num_items_in_batch);
  both in fp32 (--precision fp32, the default), or both with bf16 weights
  computing and an fp32 master copy (starting from the rounded weights)
  that AdamW updates and rounds back to bf16 after each step
  (--precision bf16: zero3's and DeepSpeed's bf16;
  PyTorch's autocast, which keeps fp32 weights, trains differently: updates
  below half a bf16 step of a weight move it there and not here);
and prints both losses and their relative difference per step, and writes
them as JSON. Exits 1 if any step differs by more than --tolerance.

    python3 tools/oracle/compare_finetune.py --zero3 ./zero3 --work /tmp/ft \\
        [--family qwen2|qwen3|llama3] [--packing pad|pack] [--precision fp32|bf16]

--backend sim --family tiny runs the same comparison on a CPU (zero3's
simulator in fp32 against PyTorch in fp32).
"""

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loss_curves  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_TOOLS = os.path.join(os.path.dirname(HERE), "data")
sys.path.insert(0, DATA_TOOLS)
import prepare_test  # noqa: E402  (its ChatML test tokenizer)


def family_config(family, vocab):
    """The layers of a released model of `family`, with `vocab` ids."""
    if family == "tiny":  # for a check of this script on a CPU (--backend sim)
        return transformers.Qwen2Config(
            vocab_size=vocab, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=1024,
            rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True,
            use_sliding_window=False)
    if family == "qwen2":  # Qwen2.5-0.5B
        return transformers.Qwen2Config(
            vocab_size=vocab, hidden_size=896, intermediate_size=4864,
            num_hidden_layers=24, num_attention_heads=14,
            num_key_value_heads=2, max_position_embeddings=32768,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
            use_sliding_window=False)
    if family == "qwen3":  # Qwen3-0.6B
        return transformers.Qwen3Config(
            vocab_size=vocab, hidden_size=1024, intermediate_size=3072,
            num_hidden_layers=28, num_attention_heads=16,
            num_key_value_heads=8, head_dim=128,
            max_position_embeddings=40960, rms_norm_eps=1e-6,
            rope_theta=1000000.0, tie_word_embeddings=True,
            use_sliding_window=False)
    if family == "llama3":  # Llama-3.2-1B
        return transformers.LlamaConfig(
            vocab_size=vocab, hidden_size=2048, intermediate_size=8192,
            num_hidden_layers=16, num_attention_heads=32,
            num_key_value_heads=8, head_dim=64,
            max_position_embeddings=131072, rms_norm_eps=1e-5,
            rope_theta=500000.0, tie_word_embeddings=True,
            rope_scaling={"rope_type": "llama3", "factor": 32.0,
                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 8192})
    raise ValueError(f"unknown family {family}")


def chat(rng):
    digits = [str(rng.randint(0, 9)) for _ in range(rng.randint(3, 60))]
    messages = []
    if rng.random() < 0.3:
        messages.append({"role": "system", "content": "Answer briefly."})
    messages.append({"role": "user",
                     "content": "Reverse: " + " ".join(digits)})
    messages.append({"role": "assistant",
                     "content": " ".join(reversed(digits))})
    return {"messages": messages}


def make_inputs(args):
    """The model folder, the chats and the prepared data; returns the
    data prefix and the checkpoint folder."""
    tok = prepare_test.build_tokenizers(os.path.join(args.work, "tok"))
    model = os.path.join(args.work, "model")
    shutil.copytree(tok["chatml"], model)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    vocab = (len(tokenizer) + 63) // 64 * 64
    config = family_config(args.family, vocab)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(
        model, safe_serialization=True)
    rng = random.Random(0)
    chats = os.path.join(args.work, "train.jsonl")
    with open(chats, "w") as f:
        for _ in range(args.chats):
            f.write(json.dumps(chat(rng)) + "\n")
    prefix = os.path.join(args.work, "data", "train")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    cmd = [sys.executable, os.path.join(DATA_TOOLS, "prepare"), "--model",
           model, "--input", chats, "--out", prefix]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return prefix, model


def read_examples(prefix):
    """The examples (token arrays) and the loss mask of a prepared prefix."""
    with open(prefix + ".idx", "rb") as f:
        head = f.read(9 + struct.calcsize("<QBQQ"))
        _, code, n, _ = struct.unpack("<QBQQ", head[9:])
        lengths = np.frombuffer(f.read(4 * n), dtype=np.int32)
    dtype = {4: np.int32, 8: np.uint16}[code]
    tokens = np.fromfile(prefix + ".bin", dtype=dtype).astype(np.int64)
    mask = np.fromfile(prefix + ".loss_mask.bin", dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    return [(tokens[starts[i]:starts[i + 1]], mask[starts[i]:starts[i + 1]])
            for i in range(n)]


def samples(examples, seq, pack):
    """Each sample's examples as (inputs, labels) pairs, as zero3 lays them
    out (core/model/document_batches.cc)."""
    out, current, rows = [], [], 0
    for ids, mask in examples:
        length = min(len(ids), seq + 1)
        need = max(length - 1, 0) if pack else min(length, seq)
        if not pack or (rows + need > seq and rows > 0):
            if current:
                out.append(current)
            current, rows = [], 0
        inputs = ids[:need]
        after_ids = np.append(ids[:length], 0)
        after_mask = np.append(mask[:length], 0)
        j = np.arange(need)
        predicted = (j + 1 < length) & (after_mask[j + 1] == 1)
        labels = np.where(predicted, after_ids[j + 1], -100)
        current.append((inputs, labels))
        rows += need
    if current:
        out.append(current)
    return out


def run_zero3(args, model, prefix, metrics):
    cmd = [args.zero3, "train", "--backend", args.backend, "--model", model,
           "--ranks", "1", "--data", prefix, "--data-in-order",
           "--data-packing",
           args.packing, "--seq", str(args.seq), "--steps", str(args.steps),
           "--metrics", metrics,
           "--set", f"bf16.enabled={str(args.precision == 'bf16').lower()}",
           "--set", f"train_micro_batch_size_per_gpu={args.batch}",
           "--set", f"optimizer.params.lr={args.lr}",
           "--set", "optimizer.params.weight_decay=0"]
    if args.backend == "sim":
        cmd += ["--races", "off"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def run_torch(args, model_dir, batches):
    gpu = args.backend == "cuda"
    device = "cuda" if gpu else "cpu"
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32).to(device)
    params = [p for p in model.parameters()]
    master = params
    if args.precision == "bf16":
        # The master starts from the rounded weights, as DeepSpeed's and
        # zero3's do.
        master = [p.detach().to(torch.bfloat16).float().requires_grad_(True)
                  for p in params]
        model.to(torch.bfloat16)
    opt = torch.optim.AdamW(master, lr=args.lr, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.0, fused=gpu)
    losses = []
    for step in range(args.steps):
        # Every example of the step's samples, right-padded: causal
        # attention keeps the padding from the rows before it, and each
        # example starts at position 0, attending only to itself.
        docs = [d for s in batches[step * args.batch:(step + 1) * args.batch]
                for d in s]
        width = max(len(x) for x, _ in docs)
        inputs = np.zeros((len(docs), width), dtype=np.int64)
        labels = np.full((len(docs), width), -100, dtype=np.int64)
        for i, (x, y) in enumerate(docs):
            inputs[i, :len(x)] = x
            labels[i, :len(y)] = y
        inputs = torch.from_numpy(inputs).to(device)
        labels = torch.from_numpy(labels).to(device)
        model.zero_grad(set_to_none=True)
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=inputs).logits
        total = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
            ignore_index=-100, reduction="sum")
        loss = total / (labels != -100).sum()
        loss.backward()
        if master is not params:
            for p, m in zip(params, master):
                m.grad = p.grad.float()
        torch.nn.utils.clip_grad_norm_(master, 1.0)
        opt.step()
        if master is not params:
            with torch.no_grad():
                for p, m in zip(params, master):
                    p.copy_(m)  # rounded to the nearest bf16
        losses.append(loss.item())
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zero3", required=True, help="the zero3 binary")
    p.add_argument("--work", required=True, help="a new folder for the files")
    p.add_argument("--family", choices=["qwen2", "qwen3", "llama3", "tiny"],
                   default="qwen2")
    p.add_argument("--backend", choices=["cuda", "sim"], default="cuda",
                   help="sim: zero3's simulator in fp32 against PyTorch on "
                   "the CPU (a check of this script)")
    p.add_argument("--packing", choices=["pad", "pack"], default="pad")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--chats", type=int, default=4000)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--tolerance", type=float, default=None,
                   help="the largest relative difference of a step's loss "
                   "(default: 1e-3 in fp32, 2e-2 in bf16)")
    args = p.parse_args()
    if args.tolerance is None:
        args.tolerance = 1e-3 if args.precision == "fp32" else 2e-2
    if os.path.exists(args.work):
        p.error(f"--work {args.work} exists; name a new folder")
    os.makedirs(args.work)
    prefix, model = make_inputs(args)
    batches = samples(read_examples(prefix), args.seq,
                      args.packing == "pack")
    if len(batches) < args.steps * args.batch:
        p.error(f"{len(batches)} samples, fewer than --steps x --batch")
    ours = run_zero3(args, model, prefix, os.path.join(args.work, "m.jsonl"))
    theirs = run_torch(args, model, batches)
    return loss_curves.report(
        ours, theirs, args, f"{args.family} {args.packing} {args.precision}: ",
        {"torch": torch.__version__, "transformers": transformers.__version__})


if __name__ == "__main__":
    sys.exit(main())
