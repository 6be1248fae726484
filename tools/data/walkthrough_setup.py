#!/usr/bin/env python3
# Copyright 2026 The zero3 Authors.
"""Makes the fine-tuning walkthrough's inputs (docs/data.md) in OUT:

  OUT/model/   a tiny Qwen2 model folder: config.json (no weights: zero3
               starts from its seeded initialization) and a ChatML
               tokenizer with its chat template, built here (no network);
  OUT/train.jsonl, OUT/eval.jsonl   chats in the `messages` format: a
               user asks for the sum of two numbers, the assistant answers.

    walkthrough_setup.py OUT [--train N] [--eval N]

Runs in the environment tools/setup.sh makes (tokenizers, transformers).
"""

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_test  # noqa: E402  (its ChatML test tokenizer)

CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
    "hidden_act": "silu",
}


def chat(rng):
    # One-digit sums: 100 questions, so that a model this small learns them
    # in a few hundred steps; eval.jsonl asks them again in other draws.
    a, b = rng.randint(0, 9), rng.randint(0, 9)
    return {"messages": [{"role": "user", "content": f"What is {a} plus {b}?"},
                         {"role": "assistant", "content": f"{a + b}"}]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--train", type=int, default=4000)
    parser.add_argument("--eval", type=int, default=200)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    folders = prepare_test.build_tokenizers(os.path.join(args.out, "tok"))
    model = os.path.join(args.out, "model")
    os.makedirs(model, exist_ok=True)
    for name in os.listdir(folders["chatml"]):
        with open(os.path.join(folders["chatml"], name), "rb") as src:
            data = src.read()
        with open(os.path.join(model, name), "wb") as dst:
            dst.write(data)
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)
    rng = random.Random(0)
    for name, count in (("train", args.train), ("eval", args.eval)):
        with open(os.path.join(args.out, name + ".jsonl"), "w") as f:
            for _ in range(count):
                f.write(json.dumps(chat(rng)) + "\n")
    print(f"walkthrough inputs in {args.out}: model/, train.jsonl "
          f"({args.train} chats), eval.jsonl ({args.eval} chats)")


if __name__ == "__main__":
    main()
