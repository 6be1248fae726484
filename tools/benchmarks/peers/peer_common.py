"""What the peer benchmarks share: the model shapes, the timed step loop, the
medians and the one JSON line each run leaves behind.

Every benchmark here trains a Qwen2.5-shaped model with random weights on
random tokens, times each step's forward, backward and optimizer update with
the device synchronized between them, and reports the medians over the steps
after the warm-up ones. The median of an even count is the upper of the two
middle values (a step that was measured), as docs/benchmarks.md takes it.
"""

import json
import os
import signal
import time
import traceback

# Exact shapes (config.json of the released checkpoints): Qwen2.5 (all but
# 7B tie the output layer to the input embedding), Qwen3-4B and
# Llama-3.2-3B (both tied), named as zero3's presets are.
QWEN3 = dict(family="qwen3", rope_theta=1000000.0, head_dim=128, max_position_embeddings=40960)
LLAMA32 = dict(family="llama", rope_theta=500000.0, head_dim=128, vocab_size=128256,
               rms_norm_eps=1e-5, max_position_embeddings=131072,
               rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                                 high_freq_factor=4.0, original_max_position_embeddings=8192))
SHAPES = {
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2),
    "qwen2.5-3b": dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                       num_attention_heads=16, num_key_value_heads=2),
    "qwen2.5-7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                       num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
                       tie_word_embeddings=False),
    "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                     num_attention_heads=32, num_key_value_heads=8, **QWEN3),
    "llama-3.2-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                         num_attention_heads=24, num_key_value_heads=8, **LLAMA32),
}
VOCAB = 151936

# Variables that keep NVLink multicast off in NCCL, PyTorch and NVSHMEM.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def model_name(name):
    """Accepts a preset's name, or '1.5b' for 'qwen2.5-1.5b'; returns the
    full preset name."""
    full = name if name in SHAPES else "qwen2.5-" + name
    if full not in SHAPES:
        raise SystemExit(f"unknown model '{name}': choose one of {', '.join(sorted(SHAPES))}")
    return full


def add_common_args(ap):
    """The flags every benchmark takes."""
    ap.add_argument("--model", default="qwen2.5-1.5b",
                    help="qwen2.5-{0.5b,1.5b,3b,7b} (or 0.5b, 1.5b, 3b, 7b), qwen3-4b, llama-3.2-3b")
    ap.add_argument("--mbs", type=int, default=4, help="sequences per micro-batch")
    ap.add_argument("--seq", type=int, default=2048, help="tokens per sequence")
    ap.add_argument("--steps", type=int, default=6, help="optimizer steps, warm-up included")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of the medians")
    ap.add_argument("--checkpointing", default="none", choices=["none", "hf", "ds"],
                    help="activation checkpointing: none, hf (transformers' gradient_checkpointing_enable) "
                         "or ds (DeepSpeed's activation_checkpointing; DeepSpeed only)")
    ap.add_argument("--label", default=None, help="the run's name in the table")
    ap.add_argument("--json-out", default=None, help="append the JSON line to this file too")


def single_process_env(port):
    """A one-process job unless a launcher set one up already."""
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(port)), ("RANK", "0"),
                       ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    os.environ.update(NO_MULTICAST)


def model_config(model):
    """A transformers config of the preset (Qwen2, Qwen3 or Llama), sdpa
    attention, no KV cache."""
    import transformers
    shape = {"vocab_size": VOCAB, "tie_word_embeddings": True, "rms_norm_eps": 1e-6,
             "max_position_embeddings": 32768, "rope_theta": 1000000.0, **SHAPES[model]}
    family = shape.pop("family", "qwen2")
    rope = {"rope_type": "default", "rope_theta": shape.pop("rope_theta")}
    rope.update(shape.pop("rope_scaling", {}))
    kind = {"qwen2": transformers.Qwen2Config, "qwen3": transformers.Qwen3Config,
            "llama": transformers.LlamaConfig}[family]
    cfg = kind(rope_parameters=rope, use_cache=False, attn_implementation="sdpa", **shape)
    cfg._attn_implementation = "sdpa"
    return cfg


def enable_checkpointing(model, function=None, reentrant=None):
    """Turns on the model's activation checkpointing (transformers'
    gradient_checkpointing_enable, torch.utils.checkpoint with `reentrant`
    as use_reentrant, or transformers' default if None); with `function`,
    every checkpointed layer calls it instead. Returns how it was done."""
    kwargs = None if reentrant is None else {"use_reentrant": reentrant}
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if function is None:
        return "hf" + ("" if kwargs is None else f" use_reentrant={reentrant}")
    layers = [m for m in model.modules() if hasattr(m, "gradient_checkpointing")]
    for m in layers:
        m._gradient_checkpointing_func = function
    return f"hf layers ({len(layers)}) calling {function.__module__}.{function.__name__}"


class Interrupted(BaseException):
    """Raised by SIGTERM (a timeout) so that a run still reports what it measured."""


def raise_on_sigterm():
    def handler(signum, frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


def upper_median(values):
    """The median; of an even count, the upper of the two middle values."""
    s = sorted(values)
    return s[len(s) // 2] if s else None


class StepTimes:
    """Per-step FWD, BWD and STEP times in ms, and the losses."""

    def __init__(self):
        self.fwd, self.bwd, self.step, self.loss = [], [], [], []

    def add(self, fwd_s, bwd_s, step_s, loss):
        self.fwd.append(round(fwd_s * 1e3, 2))
        self.bwd.append(round(bwd_s * 1e3, 2))
        self.step.append(round(step_s * 1e3, 2))
        self.loss.append(loss)

    def summary(self, warmup, tokens_per_step):
        """Medians over the steps after `warmup` (all steps if there are no
        more), the step total's median and tokens/s from it."""
        n = len(self.fwd)
        first = warmup if n > warmup else 0
        total = [f + b + s for f, b, s in zip(self.fwd, self.bwd, self.step)]
        out = {"measured_steps": n - first}
        for key, values in (("fwd_ms", self.fwd), ("bwd_ms", self.bwd), ("step_ms", self.step),
                            ("total_ms", total)):
            out[key] = upper_median(values[first:])
        out["tokens_per_s"] = round(tokens_per_step / (out["total_ms"] / 1e3), 1) if out["total_ms"] else None
        out.update(fwd_ms_all=self.fwd, bwd_ms_all=self.bwd, step_ms_all=self.step, loss=self.loss)
        return out


def timed_steps(torch, steps, forward, backward, update, times, log_prefix):
    """Runs `steps` steps: loss = forward(); backward(loss); update(); each
    phase timed between device synchronizations, appended to `times`."""
    for i in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = forward()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        backward(loss)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        update()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        times.add(t1 - t0, t2 - t1, t3 - t2, round(float(loss.item()), 4))
        print(f"[{log_prefix}] step {i + 1}: FWD {(t1 - t0) * 1e3:.0f} ms BWD {(t2 - t1) * 1e3:.0f} ms "
              f"STEP {(t3 - t2) * 1e3:.0f} ms loss {times.loss[-1]}", flush=True)


def host_profile_step(torch, forward, backward, update, prefix):
    """Runs one more step with FWD and BWD each under cProfile (the device
    synchronization at the end inside it, so waits for the device show as
    time in `synchronize` and blocking copies as time in `copy_`). Writes
    PREFIX.{fwd,bwd}.prof and PREFIX.txt (each phase's functions by own and
    by cumulative time); returns the profiled phases' wall times in ms."""
    import cProfile
    import io
    import pstats
    out = {}
    with open(prefix + ".txt", "w") as text:
        loss = None
        for phase in ("fwd", "bwd"):
            torch.cuda.synchronize()
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            if phase == "fwd":
                loss = forward()
            else:
                backward(loss)
            torch.cuda.synchronize()
            prof.disable()
            out[phase + "_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
            prof.dump_stats(f"{prefix}.{phase}.prof")
            for order, count in (("tottime", 40), ("cumulative", 80)):
                buf = io.StringIO()
                pstats.Stats(prof, stream=buf).sort_stats(order).print_stats(count)
                text.write(f"==== {phase.upper()} {out[phase + '_ms']} ms, by {order}\n{buf.getvalue()}\n")
        update()
        torch.cuda.synchronize()
    return out


def memory_figures(torch):
    import resource
    return {"peak_gpu_alloc_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
            "peak_gpu_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
            "host_maxrss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}


def emit(record, json_out):
    """Prints the record as one JSON line and appends it to `json_out`."""
    line = json.dumps(record, default=str)
    print(line, flush=True)
    if json_out:
        with open(json_out, "a") as f:
            f.write(line + "\n")


def note_failure(record, exc, times, warmup, tokens_per_step):
    """Marks the record failed (`timeout` after SIGTERM, else `error`) and
    keeps the medians of whatever steps were measured."""
    traceback.print_exc()
    record["status"] = "timeout" if isinstance(exc, Interrupted) else "error"
    record["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    if times.fwd:
        record.update(times.summary(warmup, tokens_per_step))


def finish(record, started, json_out, write=True):
    """Stamps the wall time, writes the record (if `write`), leaves the
    process group; returns the exit status."""
    record["wall_s"] = round(time.perf_counter() - started, 1)
    if write:
        emit(record, json_out)
    try:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the record is written; leave quietly
        pass
    return 0 if record["status"] == "ok" else 1
