#!/usr/bin/env python3
"""PyTorch FSDP2 on a Qwen2.5-shaped model, the optimizer on the host
(CPUOffloadPolicy) or on the GPU.

Builds the model on the meta device, shards every decoder layer and the root
with fully_shard (bf16 compute, fp32 gradient reduction), materializes it on
the host (with offload) or the GPU, and trains with torch.optim.AdamW:
--adamw fused is PyTorch's fast host AdamW, default leaves fused and foreach
unset (PyTorch's default choice). No gradient clipping.

One process per GPU; on one GPU plain python3 works, on more use
  python3 -m torch.distributed.run --nproc_per_node=N fsdp2_offload.py ...
Prints one JSON line (rank 0): FWD/BWD/STEP medians in ms, tokens/s of all
GPUs, peak memory.

    python3 tools/benchmarks/peers/fsdp2_offload.py --model 1.5b --offload 1 --pin 1 --adamw fused
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pc.add_common_args(ap)
    ap.add_argument("--offload", type=int, default=1, help="1: CPUOffloadPolicy; 0: everything on the GPU")
    ap.add_argument("--pin", type=int, default=1, help="CPUOffloadPolicy(pin_memory=...)")
    ap.add_argument("--adamw", default="fused", choices=["fused", "default", "foreach"],
                    help="torch.optim.AdamW: fused=True, nothing set, or foreach=True")
    ap.add_argument("--port", default="29521")
    a = ap.parse_args()
    a.model = pc.model_name(a.model)
    if a.checkpointing == "ds":
        ap.error("--checkpointing ds is DeepSpeed's; FSDP2 takes none or hf")
    return a


def build(a, torch, cfg):
    """The sharded model, materialized with random weights, and its optimizer."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
    from transformers import Qwen2ForCausalLM
    with torch.device("meta"):
        model = Qwen2ForCausalLM(cfg)
    how = pc.enable_checkpointing(model, reentrant=False) if a.checkpointing == "hf" else "none"
    kw = {"mp_policy": MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)}
    if a.offload:
        kw["offload_policy"] = CPUOffloadPolicy(pin_memory=bool(a.pin))
    for layer in model.model.layers:
        fully_shard(layer, **kw)
    fully_shard(model, **kw)
    model.to_empty(device="cpu" if a.offload else "cuda")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    # to_empty left the rotary table uninitialized: make it again on the GPU.
    rotary = model.model.rotary_emb
    model.model.rotary_emb = type(rotary)(cfg).to("cuda")
    extra = {"fused": True} if a.adamw == "fused" else {"foreach": True} if a.adamw == "foreach" else {}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, **extra)
    return model, opt, how


def main():
    a = parse_args()
    pc.single_process_env(a.port)
    pc.raise_on_sigterm()
    rec = {"peer": "fsdp2", "label": a.label, "model": a.model, "mbs": a.mbs, "seq": a.seq, "steps": a.steps,
           "warmup": a.warmup, "offload": bool(a.offload), "pin_memory": bool(a.pin), "adamw": a.adamw,
           "checkpointing": a.checkpointing, "status": "starting"}
    t_start = time.perf_counter()
    times = pc.StepTimes()
    rank, world = 0, 1
    try:
        import torch
        import torch.distributed as dist
        import transformers
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
        rank, world = dist.get_rank(), dist.get_world_size()
        rec["env"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                      "gpu": torch.cuda.get_device_name(), "gpus": world, "cpus": os.cpu_count(),
                      "torch_threads": torch.get_num_threads()}
        torch.manual_seed(0)
        cfg = pc.model_config(a.model)
        t0 = time.perf_counter()
        model, opt, rec["checkpointing_how"] = build(a, torch, cfg)
        rec["build_s"] = round(time.perf_counter() - t0, 2)
        rec["params"] = sum(p.numel() for p in model.parameters())
        model.train()
        g = torch.Generator(device="cuda").manual_seed(rank)
        x = torch.randint(0, cfg.vocab_size, (a.mbs, a.seq), device="cuda", generator=g)
        torch.cuda.reset_peak_memory_stats()
        rec["status"] = "running"

        def update():
            opt.step()
            opt.zero_grad(set_to_none=True)

        pc.timed_steps(torch, a.steps, lambda: model(input_ids=x, labels=x).loss, lambda loss: loss.backward(),
                       update, times, a.label or "fsdp2")
        rec.update(times.summary(a.warmup, a.mbs * a.seq * world))
        rec.update(pc.memory_figures(torch))
        rec["status"] = "ok"
    except BaseException as e:  # noqa: B902 - every run leaves a line behind
        pc.note_failure(rec, e, times, a.warmup, a.mbs * a.seq * world)
    return pc.finish(rec, t_start, a.json_out, write=rank == 0)

if __name__ == "__main__":
    sys.exit(main())
