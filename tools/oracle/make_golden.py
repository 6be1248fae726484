#!/usr/bin/env python3
"""Makes the PyTorch/transformers oracle files zero3's tests compare against.

For each tiny model (Qwen2 with tied embeddings, Qwen2 untied, a byte-token
Qwen2, Llama with an explicit head_dim; llama3 and yarn RoPE scaling, Qwen3,
OLMo 2, Phi-3 with longrope and partial rotation, Mistral with a sliding
window shorter than the sequence, Qwen2 with it on its second layer only,
Gemma 2 with soft-capping and Gemma 3 with a local RoPE base) it saves a
Hugging Face checkpoint
made by transformers (config.json and model.safetensors, fp32) and
golden.json with, for fixed token windows:
  - forward: the loss of the first batch at the saved weights and the logits
    of a few positions;
  - grad_norms: the 2-norm of every parameter's gradient of that loss;
  - adamw: the loss of each of 5 steps of torch.optim.AdamW (without and with
    gradient clipping), each loss taken before its step's update, as zero3
    prints it.
Loss: mean cross-entropy over all tokens of the batch; a window holds seq + 1
tokens, the first seq are the inputs and the last seq the targets.

With --masked, masked_golden.json beside a saved checkpoint: fine-tuning
batches (prompt targets and padding not predicted) and 5 AdamW steps whose
loss is the mean over the global batch's predicted targets, accumulated over
two micro-batches as transformers' Trainer does with num_items_in_batch.
With --packed, packed_golden.json likewise, each sample holding several
examples as zero3 packs them (an example of L tokens takes L - 1 rows, its
positions from 0; padding after the last): transformers runs the packed
row with position_ids restarting at each example and an attention mask
that keeps each example to itself, checked against running each example
alone.

Runs on the CPU in fp32 (deterministic). Needs torch and transformers:
    python3 tools/oracle/make_golden.py --out testing/testdata/hf [NAME...]
"""

import argparse
import json
import os

import torch
import transformers

SEQ = 16
BATCH = 2
STEPS = 5
ADAMW = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
LOGIT_POSITIONS = [(0, 0), (0, SEQ - 1), (1, 7)]


def models():
    common = dict(vocab_size=96, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64,
                  rms_norm_eps=1e-6, rope_theta=10000.0)
    return {
        "qwen2_tied": transformers.Qwen2Config(
            **common, tie_word_embeddings=True, use_sliding_window=False),
        "qwen2_untied": transformers.Qwen2Config(
            **common, tie_word_embeddings=False, use_sliding_window=False),
        # Byte tokens (the vocabulary of the shipped token file,
        # testing/testdata/tokens): README's end-to-end example trains it.
        "qwen2_bytes": transformers.Qwen2Config(
            **dict(common, vocab_size=259, hidden_size=64,
                   intermediate_size=128),
            tie_word_embeddings=True, use_sliding_window=False),
        "llama": transformers.LlamaConfig(
            **dict(common, head_dim=16), tie_word_embeddings=False,
            attention_bias=False, mlp_bias=False),
        # The families and RoPE types past Qwen2 and Llama, each with its
        # distinctive features on. Scaled RoPE with a pretrained context
        # (8) below the sequence length (16), so the scaling is active.
        "llama3_rope": transformers.LlamaConfig(
            **dict(common, head_dim=16), tie_word_embeddings=False,
            rope_parameters=dict(rope_type="llama3", rope_theta=10000.0,
                                 factor=8.0, low_freq_factor=1.0,
                                 high_freq_factor=4.0,
                                 original_max_position_embeddings=8)),
        "qwen2_yarn": transformers.Qwen2Config(
            **common, tie_word_embeddings=True, use_sliding_window=False,
            rope_parameters=dict(rope_type="yarn", rope_theta=10000.0,
                                 factor=4.0,
                                 original_max_position_embeddings=8)),
        # Per-head q/k RMSNorm, head_dim (16) independent of hidden / heads.
        "qwen3": transformers.Qwen3Config(
            **dict(common, head_dim=16), tie_word_embeddings=True,
            use_sliding_window=False, attention_bias=False),
        # Norms after attention and after the MLP, q/k RMSNorm over the whole
        # projections.
        "olmo2": transformers.Olmo2Config(
            **common, tie_word_embeddings=False, attention_bias=False),
        # Fused qkv_proj and gate_up_proj, half of each head rotated, longrope
        # past its pretrained context.
        "phi3": transformers.Phi3Config(
            **dict(common, rope_theta=10000.0), tie_word_embeddings=False,
            partial_rotary_factor=0.5, original_max_position_embeddings=8,
            rope_scaling=dict(type="longrope", short_factor=[1.0, 1.5],
                              long_factor=[2.0, 4.0]),
            pad_token_id=0, bos_token_id=1, eos_token_id=2),
        # A sliding window shorter than the sequence (8 of 16 tokens).
        "mistral_window": transformers.MistralConfig(
            **common, tie_word_embeddings=False, sliding_window=8),
        # Qwen2's window on the layers from max_window_layers on: layer 0
        # full, layer 1 within 8 tokens.
        "qwen2_window": transformers.Qwen2Config(
            **common, tie_word_embeddings=True, use_sliding_window=True,
            sliding_window=8, max_window_layers=1),
        # Gemma 2: (1 + w) norms around attention and the MLP, GeGLU, scaled
        # embeddings, an attention scalar (24) that is not head_dim (16),
        # layer 0 within a window of 8, soft-capping. Weights drawn with
        # std 0.3 so scores and logits reach the caps (2 and 1.5), which
        # then change the loss. No pad token: transformers would freeze its
        # embedding row's lookup gradient (padding_idx), where zero3 trains
        # every row (padding is never predicted nor attended to from later
        # positions, so its lookup gradient is zero in fine-tuning anyway).
        "gemma2": transformers.Gemma2Config(
            **dict(common, head_dim=16), initializer_range=0.3,
            query_pre_attn_scalar=24, sliding_window=8,
            attn_logit_softcapping=2.0, final_logit_softcapping=1.5,
            tie_word_embeddings=True, pad_token_id=None, bos_token_id=1,
            eos_token_id=2),
        # Gemma 3: Gemma 2's layer with q/k norms and no caps; the windowed
        # layer rotates at its own base (100), the full layer with linear
        # scaling at 10000.
        "gemma3": transformers.Gemma3TextConfig(
            **dict(common, head_dim=16), initializer_range=0.3,
            query_pre_attn_scalar=24, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
            rope_parameters={
                "full_attention": dict(rope_type="linear", factor=2.0,
                                       rope_theta=10000.0),
                "sliding_attention": dict(rope_type="default",
                                          rope_theta=100.0)},
            tie_word_embeddings=True, pad_token_id=None, bos_token_id=1,
            eos_token_id=2),
    }


def windows(vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (STEPS, BATCH, SEQ + 1), generator=g)


def loss_of(model, batch):
    logits = model(input_ids=batch[:, :-1]).logits
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    return loss, logits


def adamw(model):
    """torch.optim.AdamW with the goldens' settings."""
    return torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"],
                             betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"],
                             weight_decay=ADAMW["weight_decay"])


def train(name, config, data, clip):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        config)
    path = os.path.join(ARGS.out, name)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = adamw(model)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss, _ = loss_of(model, data[step])
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(loss.item())
    model.load_state_dict(state)
    return model, path, losses


def golden_header(name, data):
    """What every golden file starts with: the model, the versions that made
    it, the batch shape and its token windows."""
    return {
        "model": name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "seq": SEQ,
        "batch": BATCH,
        "windows": data.tolist(),
    }


def write_golden(path, kind, golden):
    """Writes `kind`_golden.json (a fine-tuning golden) beside the
    checkpoint in `path` and says its first loss and steps."""
    with open(os.path.join(path, f"{kind}_golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    print(golden["model"], kind, "loss", golden["forward"]["loss"], "steps",
          golden["adamw"]["losses"])


def masked_windows(vocab, seed):
    """Fine-tuning batches as zero3 pads them: per sample a prompt whose
    targets are not predicted, an answer whose targets are, and padding
    (token 0, not predicted) after the example's end. Returns the windows
    and the predicted flags [STEPS][BATCH][SEQ] of their targets."""
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(1, vocab, (STEPS, BATCH, SEQ + 1), generator=g)
    predicted = torch.zeros(STEPS, BATCH, SEQ, dtype=torch.long)
    for step in range(STEPS):
        for b in range(BATCH):
            length = int(torch.randint(4, SEQ + 2, (1,), generator=g))
            prompt = int(torch.randint(1, length - 1, (1,), generator=g))
            data[step, b, length:] = 0
            # Target i is token i + 1: predicted from the answer's first
            # token to the example's last.
            predicted[step, b, prompt - 1:length - 1] = 1
    return data, predicted


def masked_loss(model, batch, predicted, items):
    """One micro-batch's share of the global batch's loss, as transformers'
    Trainer computes it with num_items_in_batch: the sum over its predicted
    targets over the global batch's predicted targets."""
    logits = model(input_ids=batch[:, :-1]).logits
    labels = batch[:, 1:].masked_fill(predicted == 0, -100)
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
        ignore_index=-100, reduction="sum") / items


def masked(name):
    """masked_golden.json for the saved checkpoint `name`: the first batch's
    loss, and 5 AdamW steps with each global batch in two micro-batches of
    one sample (accumulated as the Trainer does)."""
    path = os.path.join(ARGS.out, name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32)
    data, predicted = masked_windows(model.config.vocab_size, seed=4321)
    with torch.no_grad():
        first = masked_loss(model, data[0], predicted[0],
                            int(predicted[0].sum())).item()
    opt = adamw(model)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        items = int(predicted[step].sum())
        total = 0.0
        for b in range(BATCH):
            loss = masked_loss(model, data[step, b:b + 1],
                               predicted[step, b:b + 1], items)
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    golden = dict(
        golden_header(name, data),
        predicted=predicted.tolist(),
        forward={"loss": first},
        adamw=dict(ADAMW, micro_batches=BATCH, losses=losses))
    write_golden(path, "masked", golden)


def packed_samples(vocab, seed):
    """Samples of SEQ rows, each several examples packed as zero3 packs
    them, then padding. Returns inputs, targets (-100: not predicted) and
    positions, each [STEPS][BATCH][SEQ], and each sample's examples as
    (first row, rows)."""
    g = torch.Generator().manual_seed(seed)
    shape = (STEPS, BATCH, SEQ)
    inputs = torch.zeros(shape, dtype=torch.long)
    targets = torch.full(shape, -100, dtype=torch.long)
    positions = torch.zeros(shape, dtype=torch.long)
    spans = []
    for step in range(STEPS):
        for b in range(BATCH):
            row, mine = 0, []
            while True:
                length = int(torch.randint(3, 9, (1,), generator=g))
                if row + length - 1 > SEQ:
                    break
                tokens = torch.randint(1, vocab, (length,), generator=g)
                prompt = int(torch.randint(1, length - 1, (1,), generator=g))
                rows = length - 1
                inputs[step, b, row:row + rows] = tokens[:-1]
                # Target j is token j + 1: the answer's tokens predicted.
                targets[step, b, row + prompt - 1:row + rows] = tokens[prompt:]
                positions[step, b, row:row + rows] = torch.arange(rows)
                mine.append((row, rows))
                row += rows
            positions[step, b, row:] = torch.arange(SEQ - row)
            spans.append(mine)
    return inputs, targets, positions, spans


def packed_loss(model, inputs, targets, positions, spans, items):
    """One micro-batch's share of the global batch's loss: the packed rows
    with restarting position_ids and a mask keeping each example (and the
    padding) to itself; checked against each example run alone."""
    n = inputs.shape[0]
    allowed = torch.zeros(n, 1, SEQ, SEQ, dtype=torch.bool)
    for s in range(n):
        start = 0
        for i in range(SEQ):
            if positions[s, i] == 0:
                start = i
            allowed[s, 0, i, start:i + 1] = True
    mask = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
    logits = model(input_ids=inputs, position_ids=positions,
                   attention_mask=mask).logits
    total = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
        ignore_index=-100, reduction="sum")
    with torch.no_grad():
        alone = sum(
            torch.nn.functional.cross_entropy(
                model(input_ids=inputs[s:s + 1, r:r + k]).logits[0],
                targets[s, r:r + k], ignore_index=-100, reduction="sum")
            for s, mine in enumerate(spans) for r, k in mine)
    assert abs(total.item() - alone.item()) <= 1e-5 * abs(alone.item()), (
        total.item(), alone.item())
    return total / items


def packed(name):
    """packed_golden.json for the saved checkpoint `name`: as masked(), with
    packed samples."""
    path = os.path.join(ARGS.out, name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager")
    inputs, targets, positions, spans = packed_samples(
        model.config.vocab_size, seed=2468)
    with torch.no_grad():
        first = packed_loss(model, inputs[0], targets[0], positions[0],
                            spans[:BATCH],
                            int((targets[0] != -100).sum())).item()
    opt = adamw(model)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        items = int((targets[step] != -100).sum())
        total = 0.0
        for b in range(BATCH):
            loss = packed_loss(model, inputs[step, b:b + 1],
                               targets[step, b:b + 1],
                               positions[step, b:b + 1],
                               [spans[step * BATCH + b]], items)
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    windows = torch.cat([inputs, torch.zeros(STEPS, BATCH, 1,
                                             dtype=torch.long)], dim=2)
    golden = dict(
        golden_header(name, windows),
        targets=targets.masked_fill(targets == -100, -1).tolist(),
        positions=positions.tolist(),
        forward={"loss": first},
        adamw=dict(ADAMW, micro_batches=BATCH, losses=losses))
    write_golden(path, "packed", golden)


def main():
    if ARGS.packed:
        for name in ARGS.names or ["qwen2_tied"]:
            packed(name)
        return
    if ARGS.masked:
        for name in ARGS.names or ["qwen2_tied"]:
            masked(name)
        return
    for name, config in models().items():
        if ARGS.names and name not in ARGS.names:
            continue
        data = windows(config.vocab_size, seed=1234)
        model, path, losses = train(name, config, data, clip=0.0)
        _, _, clipped = train(name, config, data, clip=1.0)
        model.save_pretrained(path, safe_serialization=True)
        model.zero_grad()
        loss, logits = loss_of(model, data[0])
        loss.backward()
        golden = {
            **golden_header(name, data),
            "forward": {
                "loss": loss.item(),
                "logits": [{"sample": b, "position": p,
                            "values": logits[b, p].tolist()}
                           for b, p in LOGIT_POSITIONS],
            },
            "grad_norms": {n: p.grad.norm().item()
                           for n, p in model.named_parameters()},
            "adamw": dict(ADAMW, losses=losses),
            "adamw_clipped": dict(ADAMW, gradient_clipping=1.0,
                                  losses=clipped),
        }
        with open(os.path.join(path, "golden.json"), "w") as f:
            json.dump(golden, f, indent=1)
        print(name, "loss", golden["forward"]["loss"], "steps", losses)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("names", nargs="*",
                        help="the models to make (default: all)")
    parser.add_argument("--masked", action="store_true",
                        help="instead, masked_golden.json (fine-tuning "
                        "batches: prompt and padding not predicted, two "
                        "micro-batches per step) for saved checkpoints "
                        "(default: qwen2_tied)")
    parser.add_argument("--packed", action="store_true",
                        help="instead, packed_golden.json (several "
                        "examples per sample, positions restarting, "
                        "attention within each) for saved checkpoints "
                        "(default: qwen2_tied)")
    ARGS = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    main()
