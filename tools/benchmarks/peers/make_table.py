#!/usr/bin/env python3
"""Writes the Markdown table of a peer benchmark run from its JSON lines:
one table per model (system, FWD, BWD, STEP in ms, tokens/s), rows in the
order the runs were made, then what was not measured and why.

    python3 tools/benchmarks/peers/make_table.py peers.jsonl --machine machine.json > table.md
"""

import argparse
import json
import re
import sys


def read_records(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            # a build that worked is no run; one that failed says why runs were skipped
            if isinstance(rec, dict) and not (rec.get("build_only") and rec.get("status") == "ok"):
                out.append(rec)
    return out


def describe(rec):
    """The system column: what ran, in words."""
    peer = rec.get("peer")
    ckpt = rec.get("checkpointing") or "none"
    suffix = "" if ckpt == "none" else f", activation checkpointing ({ckpt})"
    if peer == "zero3":
        variant = rec.get("variant") or ""
        if "offload_optimizer.device=none" in variant:
            what = "no offload"
        elif "pin_memory=false" in variant:
            what = "optimizer offloaded, pageable memory, blocking copies"
        else:
            what = "optimizer offloaded (pinned, asynchronous)"
        ratio = re.search(r"offload_optimizer\.ratio=(\S+)", variant)
        if ratio:
            share = ratio.group(1).strip('"')
            what += f", `ratio: {share}`" if share != "auto" else ', `ratio: "auto"`'
        if "super_offload=true" in variant:
            what += ", `super_offload: true`"
        overlap = re.search(r"zero3\.host_step_overlap=(\S+)", variant)
        if overlap:
            what += f", `host_step_overlap: {overlap.group(1)}`"
            if overlap.group(1) == "delayed":
                what += " (one-step delayed update: changes the training)"
        placement = re.search(r"zero3\.offloaded_step=(\S+)", variant)
        if placement:
            what += f", `zero3.offloaded_step: {placement.group(1)}`"
        bucket = re.search(r"reduce_bucket_size=(\S+)", variant)
        if bucket:
            what += f", `reduce_bucket_size: {bucket.group(1)}`"
        clip = re.search(r"gradient_clipping=(\S+)", variant)
        if clip:
            what += f", `gradient_clipping: {clip.group(1)}`"
        if "--gradient-checkpointing" in variant:
            what += ", activation checkpointing (`--gradient-checkpointing`)"
        return f"zero3, {what}"
    if peer == "fsdp2":
        if not rec.get("offload"):
            return "FSDP2, no offload" + suffix
        adamw = {"fused": "AdamW(fused=True)", "foreach": "AdamW(foreach=True)"}.get(rec.get("adamw"), "default AdamW")
        return f"FSDP2 CPUOffloadPolicy(pin_memory={bool(rec.get('pin_memory'))}), {adamw}" + suffix
    if peer == "deepspeed-zero3":
        tree = rec.get("ds_tree", "")
        where = {"ds_pr8207": "at #8207", "ds_head": "HEAD"}.get(tree, tree)
        commit = (rec.get("ds_commit") or "")[:7]
        version = rec.get("ds_version", "").split("+")[0]
        name = f"DeepSpeed {version} {where}".replace("  ", " ").strip()
        if commit:
            name += f" ({commit})"
        pin = rec.get("pin")
        extras = [f"`pin_memory: {pin}`" if pin in ("true", "false") else "pin_memory default"]
        extras += [f"`{k}: {json.dumps(v)}`" for k, v in (rec.get("offload_extra") or {}).items()]
        bf16 = (rec.get("ds_config") or {}).get("bf16") or {}
        extras += [f"`bf16.{k}: {json.dumps(v)}`" for k, v in bf16.items() if k != "enabled"]
        clip = (rec.get("ds_config") or {}).get("gradient_clipping", 1.0)
        if clip != 1.0:
            extras.append(f"`gradient_clipping: {clip:g}`")
        return f"{name}, {', '.join(extras)}" + suffix
    return rec.get("label", "?")


def ms(value):
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def model_title(model):
    """The heading of a model's table: "Qwen2.5-1.5B", "Qwen3-4B",
    "Llama-3.2-3B" (a bare size is Qwen2.5's)."""
    family, _, size = model.rpartition("-")
    family = {"": "Qwen2.5", "qwen2.5": "Qwen2.5", "qwen3": "Qwen3",
              "llama-3.2": "Llama-3.2"}.get(family, family)
    return f"{family}-{size.upper()}"


def table(records, model):
    rows = [r for r in records if r.get("model") == model and r.get("status") == "ok"]
    lines = ["| system | FWD ms | BWD ms | STEP ms | tokens/s |", "|---|---|---|---|---|"]
    for r in rows:
        tps = r.get("tokens_per_s")
        lines.append(f"| {describe(r)} | {ms(r.get('fwd_ms'))} | {ms(r.get('bwd_ms'))} | {ms(r.get('step_ms'))} | "
                     f"{'—' if tps is None else f'{tps:,.0f}'} |")
    return lines


def not_measured(records):
    lines = []
    for r in records:
        if r.get("status") == "ok":
            continue
        why = r.get("status", "?")
        if r.get("error"):
            why += ": " + r["error"].splitlines()[0][:160]
        partial = ""
        if r.get("fwd_ms") is not None:
            partial = (f" (before it stopped, {r.get('measured_steps')} measured steps: FWD {ms(r['fwd_ms'])}, "
                       f"BWD {ms(r['bwd_ms'])}, STEP {ms(r['step_ms'])} ms)")
        lines.append(f"- {r.get('label', '?')} ({r.get('model', '?')}): {why}{partial}")
    return lines


def header(records, machine):
    first = next((r for r in records if r.get("mbs")), {})
    mbs, seq = first.get("mbs", 4), first.get("seq", 2048)
    lines = []
    if machine:
        lines.append(f"- **Date:** {machine.get('date', '?')}.")
        lines.append(f"- **Machine:** {machine.get('gpu', '?')} (driver {machine.get('driver', '?')}), "
                     f"{machine.get('cpus', '?')} host cores, {machine.get('mem_gib', '?')} GiB; "
                     f"torch {machine.get('torch', '?')}, transformers {machine.get('transformers', '?')}, "
                     f"nvcc {machine.get('nvcc', '?')}.")
    lines.append(f"- **Setting:** one GPU, micro-batch {mbs} × {seq} tokens, bf16, random weights and tokens; "
                 "medians over the steps after the first two (of an even count, the upper middle value); "
                 "tokens/s from the median of FWD+BWD+STEP.")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl")
    ap.add_argument("--machine", default=None, help="a JSON file describing the machine")
    a = ap.parse_args()
    records = read_records(a.jsonl)
    machine = {}
    if a.machine:
        try:
            with open(a.machine) as f:
                machine = json.load(f)
        except (OSError, ValueError):
            machine = {}
    out = ["# zero3 and its peers on one GPU", ""] + header(records, machine)
    models = []
    for r in records:
        if r.get("model") and r["model"] not in models:
            models.append(r["model"])
    for model in models:
        out += ["", f"## {model_title(model)}", ""] + table(records, model)
    missing = not_measured(records)
    if missing:
        out += ["", "Not measured:", ""] + missing
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
