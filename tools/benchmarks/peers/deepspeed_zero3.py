#!/usr/bin/env python3
"""DeepSpeed ZeRO-3 with the optimizer offloaded to the host (DeepSpeedCPUAdam)
on a Qwen2.5-shaped model.

One process, one GPU, random weights. DeepSpeed is imported from the tree
given by --src (made by export_deepspeed.sh: <src>/deepspeed and
<src>/DS_COMMIT), so that two commits can be timed side by side. CPUAdam is
built just in time with ninja on first use, into a TORCH_EXTENSIONS_DIR of
its own per tree (/tmp/torch_ext_<tree name>); --build-only only builds it.

    python3 tools/benchmarks/peers/deepspeed_zero3.py --src /tmp/ds/ds_head --build-only
    python3 tools/benchmarks/peers/deepspeed_zero3.py --src /tmp/ds/ds_head --model 1.5b --pin true
    python3 tools/benchmarks/peers/deepspeed_zero3.py --src /tmp/ds/ds_head --offload-extra '{"ratio": 0.5}'

The configuration: bf16, stage 3, offload_optimizer to the host, overlap_comm,
contiguous_gradients, reduce_bucket_size 5e8, gradient_clipping 1.0 (--gradient-clipping), AdamW
lr 1e-4; everything else is the tree's defaults. The model is built the way
transformers builds one for ZeRO-3 (inside deepspeed.zero.Init with weight
init suppressed, then initialized gathered). Prints one JSON line: FWD/BWD/
STEP medians in ms, tokens/s, peak memory, the DeepSpeed commit, and what
the tree does with pinned offload buffers and the fp32 gradient copy.
"""

import argparse
import ast
import contextlib
import copy
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pc.add_common_args(ap)
    ap.add_argument("--src", required=True, help="exported DeepSpeed tree (holds deepspeed/ and DS_COMMIT)")
    ap.add_argument("--pin", default="true", choices=["true", "false", "default"],
                    help="offload_optimizer.pin_memory; default leaves the key out (the tree's default)")
    ap.add_argument("--offload-extra", default="{}",
                    help='JSON merged into offload_optimizer, e.g. \'{"ratio": 0.5}\' or \'{"super_offload": true}\'')
    ap.add_argument("--bf16-extra", default="{}",
                    help='JSON merged into the bf16 section, e.g. '
                         '\'{"bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}\'')
    ap.add_argument("--aio", default="{}",
                    help='JSON for the top-level aio section (NVMe offload), e.g. \'{"block_size": 1048576}\'')
    ap.add_argument("--overlap-comm", default="true", choices=["true", "false"])
    ap.add_argument("--reduce-bucket-size", type=float, default=5e8)
    ap.add_argument("--gradient-clipping", type=float, default=1.0, help="gradient_clipping; 0 turns it off")
    ap.add_argument("--ext-dir", default=None, help="TORCH_EXTENSIONS_DIR; default /tmp/torch_ext_<tree name>")
    ap.add_argument("--port", default="29511")
    ap.add_argument("--build-only", action="store_true", help="only build and load CPUAdam, then exit")
    ap.add_argument("--host-profile", default=None, metavar="PREFIX",
                    help="after the timed steps, one more step under cProfile: where the host thread's time "
                         "goes in FWD and BWD (PREFIX.txt, PREFIX.fwd.prof, PREFIX.bwd.prof)")
    a = ap.parse_args()
    a.model = pc.model_name(a.model)
    a.src = os.path.abspath(a.src)
    a.offload_extra = json.loads(a.offload_extra)
    a.bf16_extra = json.loads(a.bf16_extra)
    a.aio = json.loads(a.aio)
    return a


def setup_env(a):
    """What must be in the environment before torch and deepspeed are imported."""
    env = os.environ
    env.setdefault("DS_BUILD_OPS", "0")  # build every op just in time
    env["TORCH_EXTENSIONS_DIR"] = a.ext_dir or f"/tmp/torch_ext_{os.path.basename(a.src.rstrip('/'))}"
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    env.setdefault("DS_SKIP_CUDA_CHECK", "1")  # nvcc's minor version may differ from torch's CUDA
    env.setdefault("DS_ACCELERATOR", "cuda")
    pc.single_process_env(a.port)
    # torch.utils.cpp_extension runs ninja from PATH: the interpreter's bin and the ninja package's.
    extra = [os.path.dirname(sys.executable)]
    with contextlib.suppress(Exception):
        import ninja
        extra.append(getattr(ninja, "BIN_DIR", ""))
    env["PATH"] = os.pathsep.join([p for p in extra if p] + [env.get("PATH", "")])


def cuda_link_env(torch):
    """CPUAdam links -lcudart -lcurand (and -lcublas). Where CUDA_HOME lacks the
    unversioned .so names (a pip-installed CUDA), point LIBRARY_PATH at links to
    the versioned libraries and load them."""
    import ctypes
    import glob
    import site
    from torch.utils import cpp_extension
    home = cpp_extension.CUDA_HOME
    report = {"cuda_home": home, "link_shim": []}
    if not home:
        return report
    libdirs = [os.path.join(home, d) for d in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"))]
    sites = set(site.getsitepackages() + [os.path.dirname(os.path.dirname(torch.__file__))])
    roots = libdirs + [p for s in sites for p in glob.glob(os.path.join(s, "nvidia", "*", "lib"))]
    shim = "/tmp/ds_ldshim"
    for name in ("cudart", "curand", "cublas"):
        if any(os.path.exists(os.path.join(d, f"lib{name}.so")) for d in libdirs):
            continue
        found = sorted(c for r in roots for c in glob.glob(os.path.join(r, f"lib{name}.so.*")))
        if not found:
            report["link_shim"].append(f"lib{name}.so: not found")
            continue
        os.makedirs(shim, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.symlink(found[0], os.path.join(shim, f"lib{name}.so"))
        with contextlib.suppress(OSError):
            ctypes.CDLL(found[0], mode=ctypes.RTLD_GLOBAL)
        report["link_shim"].append(found[0])
    if any(not s.endswith("not found") for s in report["link_shim"]):
        os.environ["LIBRARY_PATH"] = os.pathsep.join([shim, os.environ.get("LIBRARY_PATH", "")])
    return report


def read_commit(src):
    path = os.path.join(src, "DS_COMMIT")
    if not os.path.isfile(path):
        return {"ds_tree": os.path.basename(src), "ds_commit": None, "ds_subject": None}
    lines = open(path).read().splitlines()
    name, _, full = lines[0].partition(" ")
    return {"ds_tree": name, "ds_commit": full, "ds_subject": lines[1] if len(lines) > 1 else None}


def method_source(path, cls_name, fn_name):
    """cls_name.fn_name's source read from the file (inspect would return the
    source of a decorator's wrapper)."""
    text = open(path, encoding="utf-8").read()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == fn_name:
                    return ast.get_source_segment(text, item) or ""
    return ""


def non_blocking_calls(text, callee):
    """For each call of `callee` in `text`: does it pass non_blocking=True?"""
    out = []
    for m in re.finditer(re.escape(callee) + r"\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append("non_blocking=True" in text[m.end():i])
    return out


def tree_facts(ds_dir):
    """How the tree offloads, read from its source: the pin_memory defaults of
    offload_param and offload_optimizer, and whether ZeRO-3 copies fp32
    gradients to the host without blocking."""
    config = open(os.path.join(ds_dir, "runtime", "zero", "offload_config.py"), encoding="utf-8").read()
    stage3 = os.path.join(ds_dir, "runtime", "zero", "stage3.py")
    return {
        "pin_memory_defaults(param, optimizer)": re.findall(r"pin_memory: bool = (\w+)", config),
        "partition_grads_fp32_copy_non_blocking": non_blocking_calls(
            method_source(stage3, "DeepSpeedZeroOptimizer_Stage3", "partition_grads"), "fp32_grad_tensor.copy_"),
    }


def engine_facts(engine, torch):
    """What the engine ended up with: effective pin_memory, buffers' placement."""
    facts = {}
    opt, zc = engine.optimizer, engine._config.zero_config
    with contextlib.suppress(Exception):
        facts["offload_optimizer.pin_memory"] = zc.offload_optimizer.pin_memory if zc.offload_optimizer else None
    for name in ("overlap_comm", "contiguous_gradients", "reduce_bucket_size", "sub_group_size"):
        with contextlib.suppress(Exception):
            facts[name] = getattr(zc, name)
    with contextlib.suppress(Exception):
        grads = [g.grad for g in opt.fp32_partitioned_groups_flat]
        facts["fp32_grads"] = {"sub_groups": len(grads), "device": str(grads[0].device),
                               "pinned": [bool(g.is_pinned()) for g in grads]}
    facts["optimizer"] = f"{type(opt).__name__}/{type(getattr(opt, 'optimizer', None)).__name__}"
    return facts


def ds_config(a):
    zero = {"stage": 3, "offload_optimizer": {"device": "cpu"}, "overlap_comm": a.overlap_comm == "true",
            "contiguous_gradients": True, "reduce_bucket_size": int(a.reduce_bucket_size)}
    if a.pin != "default":
        zero["offload_optimizer"]["pin_memory"] = a.pin == "true"
    zero["offload_optimizer"].update(a.offload_extra)
    config = {"train_micro_batch_size_per_gpu": a.mbs, "gradient_accumulation_steps": 1,
              "gradient_clipping": a.gradient_clipping, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": zero,
              "steps_per_print": 1000000, "wall_clock_breakdown": False}
    config["bf16"].update(a.bf16_extra)
    if a.aio:
        config["aio"] = a.aio
    if a.checkpointing == "ds":
        config["activation_checkpointing"] = {"partition_activations": False, "cpu_checkpointing": False,
                                              "contiguous_memory_optimization": False,
                                              "synchronize_checkpoint_boundary": False, "profile": False}
    return config


def build_model(deepspeed, config, cfg):
    """The model built under zero.Init as transformers builds it for ZeRO-3."""
    from transformers import Qwen2ForCausalLM
    try:
        from transformers.initialization import no_init_weights
        from transformers.integrations.deepspeed import initialize_weights_zero3
    except ImportError:
        no_init_weights = initialize_weights_zero3 = None
    with contextlib.ExitStack() as stack:
        if no_init_weights:
            stack.enter_context(no_init_weights())
        stack.enter_context(deepspeed.zero.Init(config_dict_or_path=copy.deepcopy(config)))
        model = Qwen2ForCausalLM(cfg)
    if initialize_weights_zero3:
        initialize_weights_zero3(model)
        model.tie_weights()
    return model, "no_init_weights + initialize_weights_zero3" if initialize_weights_zero3 else "plain"


def enable_checkpointing(a, deepspeed, config, model):
    if a.checkpointing == "hf":
        return pc.enable_checkpointing(model)
    if a.checkpointing == "ds":
        deepspeed.checkpointing.configure(None, deepspeed_config=copy.deepcopy(config))
        return pc.enable_checkpointing(model, function=deepspeed.checkpointing.checkpoint)
    return "none"


def import_deepspeed(a, rec):
    sys.path.insert(0, a.src)
    with contextlib.suppress(ImportError):
        import setuptools  # noqa: F401  (its distutils shim: op_builder imports distutils on 3.12)
    import torch
    import deepspeed
    if not os.path.abspath(deepspeed.__file__).startswith(a.src + os.sep):
        raise RuntimeError(f"deepspeed was imported from {deepspeed.__file__}, not from {a.src}")
    rec.update(ds_version=deepspeed.__version__, tree_facts=tree_facts(os.path.dirname(deepspeed.__file__)))
    rec["env"] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "python": sys.version.split()[0],
                  "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                  "TORCH_EXTENSIONS_DIR": os.environ["TORCH_EXTENSIONS_DIR"]}
    rec["env"].update(cuda_link_env(torch))
    from deepspeed.ops.op_builder import CPUAdamBuilder
    t0 = time.perf_counter()
    CPUAdamBuilder().load(verbose=a.build_only)
    rec["cpu_adam_load_s"] = round(time.perf_counter() - t0, 2)  # the build too, on a cold directory
    return torch, deepspeed


def train(a, rec, times, torch, deepspeed):
    import transformers
    rec["env"].update(transformers=transformers.__version__, gpu=torch.cuda.get_device_name(0))
    torch.cuda.set_device(0)
    deepspeed.init_distributed(dist_backend="nccl")
    config = ds_config(a)
    rec["ds_config"] = config
    cfg = pc.model_config(a.model)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model, rec["init"] = build_model(deepspeed, config, cfg)
    rec["checkpointing_how"] = enable_checkpointing(a, deepspeed, config, model)
    rec["model_build_s"] = round(time.perf_counter() - t0, 2)
    rec["params"] = int(sum(getattr(p, "ds_numel", p.numel()) for p in {id(p): p for p in model.parameters()}.values()))
    t0 = time.perf_counter()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=copy.deepcopy(config))
    rec["ds_init_s"] = round(time.perf_counter() - t0, 2)
    rec["engine_facts"] = engine_facts(engine, torch)
    engine.train()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randint(0, cfg.vocab_size, (a.mbs, a.seq), device="cuda", generator=g)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    rec["status"] = "running"
    pc.timed_steps(torch, a.steps, lambda: engine(input_ids=x, labels=x).loss, engine.backward, engine.step,
                   times, rec["label"])
    rec.update(times.summary(a.warmup, a.mbs * a.seq))
    rec.update(pc.memory_figures(torch))
    if a.host_profile:
        rec["host_profile"] = pc.host_profile_step(torch, lambda: engine(input_ids=x, labels=x).loss,
                                                   engine.backward, engine.step, a.host_profile)


def main():
    a = parse_args()
    setup_env(a)
    pc.raise_on_sigterm()
    rec = {"peer": "deepspeed-zero3", **read_commit(a.src)}
    rec["label"] = a.label or rec["ds_tree"] + ("-build" if a.build_only else "")
    rec.update(model=a.model, mbs=a.mbs, seq=a.seq, steps=a.steps, warmup=a.warmup, pin=a.pin,
               offload_extra=a.offload_extra, checkpointing=a.checkpointing, build_only=a.build_only,
               status="starting")
    t_start = time.perf_counter()
    times = pc.StepTimes()
    try:
        torch, deepspeed = import_deepspeed(a, rec)
        if not a.build_only:
            train(a, rec, times, torch, deepspeed)
        rec["status"] = "ok"
    except BaseException as e:  # noqa: B902 - every run leaves a line behind
        pc.note_failure(rec, e, times, a.warmup, a.mbs * a.seq)
    return pc.finish(rec, t_start, a.json_out)

if __name__ == "__main__":
    sys.exit(main())
