#!/usr/bin/env python3
"""Makes testing/testdata/rope/rope_golden.json: RoPE's inverse frequencies
and attention scaling as transformers computes them, for config.json files
of each rope_type (default, linear, dynamic, yarn, longrope, llama3), in
transformers 4.x's layout (rope_scaling beside rope_theta) and 5.x's
(rope_parameters), with partial_rotary_factor.

core/model:rope_test reads each config with zero3's config reader and
compares zero3's frequencies with these (relative 1e-6: transformers
computes in float32, zero3 in double).

Runs on the CPU; needs torch and transformers:
    python3 tools/oracle/make_rope_golden.py \\
        --out testing/testdata/rope/rope_golden.json
"""

import argparse
import json

import torch
import transformers
from transformers.models.llama import modeling_llama
from transformers.models.phi3 import modeling_phi3
from transformers.models.qwen2 import modeling_qwen2


def base(arch, **kw):
    c = dict(architectures=[arch], vocab_size=128, hidden_size=512,
             intermediate_size=1024, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=2,
             rms_norm_eps=1e-5, max_position_embeddings=131072,
             tie_word_embeddings=False)
    c.update(kw)
    return c


def cases():
    llama = "LlamaForCausalLM"
    phi3 = "Phi3ForCausalLM"
    longrope_pairs = 48  # head_dim 96
    short = [1.0 + 0.01 * i for i in range(longrope_pairs)]
    long = [1.0 + 0.5 * i for i in range(longrope_pairs)]
    return [
        ("default", base(llama, rope_theta=500000.0), [16]),
        ("llama3, 4.x layout (Llama 3.1)",
         base(llama, rope_theta=500000.0,
              rope_scaling=dict(rope_type="llama3", factor=8.0,
                                low_freq_factor=1.0, high_freq_factor=4.0,
                                original_max_position_embeddings=8192)),
         [16]),
        ("llama3, 5.x layout (Llama 3.2)",
         base(llama, rope_parameters=dict(
             rope_type="llama3", rope_theta=500000.0, factor=32.0,
             low_freq_factor=1.0, high_freq_factor=4.0,
             original_max_position_embeddings=8192)),
         [16]),
        ("linear", base(llama, rope_theta=10000.0,
                        rope_scaling=dict(type="linear", factor=4.0)), [16]),
        ("dynamic", base(llama, rope_theta=10000.0, max_position_embeddings=64,
                         rope_scaling=dict(rope_type="dynamic", factor=2.0)),
         [16, 256]),
        ("yarn (Qwen2.5 long context)",
         base("Qwen2ForCausalLM", rope_theta=1000000.0,
              max_position_embeddings=32768,
              rope_scaling=dict(rope_type="yarn", factor=4.0,
                                original_max_position_embeddings=32768)),
         [16]),
        ("yarn with mscale and no truncation",
         base(llama, rope_parameters=dict(
             rope_type="yarn", rope_theta=10000.0, factor=40.0,
             mscale=1.0, mscale_all_dim=0.707, beta_fast=16.0, beta_slow=2.0,
             truncate=False, original_max_position_embeddings=4096)),
         [16]),
        ("yarn with attention_factor",
         base(llama, rope_parameters=dict(
             rope_type="yarn", rope_theta=10000.0, factor=8.0,
             attention_factor=1.25, original_max_position_embeddings=2048)),
         [16]),
        ("longrope (Phi-3 128k)",
         base(phi3, hidden_size=768, num_attention_heads=8,
              num_key_value_heads=8, rope_theta=10000.0,
              original_max_position_embeddings=4096,
              rope_scaling=dict(type="longrope", short_factor=short,
                                long_factor=long)),
         [16, 8192]),
        ("partial rotary, longrope (Phi-4-mini)",
         base(phi3, hidden_size=1024, num_attention_heads=8,
              num_key_value_heads=8, rope_theta=10000.0,
              partial_rotary_factor=0.75,
              original_max_position_embeddings=4096,
              rope_scaling=dict(type="longrope", short_factor=short,
                                long_factor=long)),
         [16, 8192]),
        ("partial rotary, default (Phi-3 layout)",
         base(phi3, rope_theta=10000.0, partial_rotary_factor=0.5), [16]),
    ]


def rotary_of(d):
    """The model's own rotary embedding module for config dict `d`."""
    arch = d["architectures"][0]
    cls, rotary = {
        "LlamaForCausalLM": (transformers.LlamaConfig,
                             modeling_llama.LlamaRotaryEmbedding),
        "Qwen2ForCausalLM": (transformers.Qwen2Config,
                             modeling_qwen2.Qwen2RotaryEmbedding),
        "Phi3ForCausalLM": (transformers.Phi3Config,
                            modeling_phi3.Phi3RotaryEmbedding)}[arch]
    config = cls(**{k: v for k, v in d.items() if k != "architectures"})
    return config, rotary(config)


def main(out):
    golden = {"torch": torch.__version__,
              "transformers": transformers.__version__, "cases": []}
    for name, d, seqs in cases():
        for seq in seqs:
            config, rotary = rotary_of(d)
            # A forward at positions 0..seq-1 applies the dynamic and
            # longrope updates, as training at that length does.
            x = torch.zeros(1, seq, 8)
            rotary(x, torch.arange(seq)[None, :])
            golden["cases"].append({
                "name": name, "config": d, "seq": seq,
                "rope_type": config.rope_parameters["rope_type"],
                "inv_freq": rotary.inv_freq.double().tolist(),
                "attention_scaling": float(rotary.attention_scaling)})
            print(name, seq, len(rotary.inv_freq),
                  float(rotary.attention_scaling))
    with open(out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output JSON file")
    main(parser.parse_args().out)
