#!/usr/bin/env python3
# Copyright 2026 The zero3 Authors.
"""Loads an exported zero3 model in transformers and answers held-out chats.

    walkthrough_generate.py HFDIR EVAL.jsonl [--show N]

Greedy generation after the chat template's generation prompt, for every
chat of EVAL.jsonl (the walkthrough's sums): prints a few answers and the
share that are exactly the reference answer. Needs torch and transformers.
"""

import argparse
import json

import torch
import transformers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("eval")
    parser.add_argument("--show", type=int, default=5)
    args = parser.parse_args()
    tok = transformers.AutoTokenizer.from_pretrained(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model, dtype=torch.float32)
    model.eval()
    # Stop at the end of the assistant's turn as the chat template ends it
    # (ChatML's <|im_end|>) or at the tokenizer's end of text.
    stop = [tok.eos_token_id]
    end_of_turn = tok.convert_tokens_to_ids("<|im_end|>")
    if isinstance(end_of_turn, int) and end_of_turn != tok.unk_token_id:
        stop.append(end_of_turn)
    right = total = 0
    with open(args.eval) as f:
        chats = [json.loads(line)["messages"] for line in f if line.strip()]
    for i, messages in enumerate(chats):
        prompt = tok.apply_chat_template(messages[:-1], tokenize=True,
                                         add_generation_prompt=True,
                                         return_dict=False)
        ids = torch.tensor([prompt])
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=8, do_sample=False,
                                 eos_token_id=stop,
                                 pad_token_id=tok.eos_token_id)
        answer = tok.decode(out[0, len(prompt):],
                            skip_special_tokens=True).strip()
        want = messages[-1]["content"]
        right += answer == want
        total += 1
        if i < args.show:
            print(f"{messages[0]['content']!r} -> {answer!r} (want {want!r})")
    print(f"exact answers: {right} of {total} ({100.0 * right / total:.1f}%)")


if __name__ == "__main__":
    main()
