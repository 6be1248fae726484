#!/usr/bin/env python3
"""Turns one `zero3 train --metrics FILE` run into the peer benchmarks' JSON
line: FWD/BWD/STEP medians in ms over the steps after --warmup (the same
rule as the peers: of an even count, the upper middle value), tokens/s from
the median step total, peak device and pinned host memory.

    python3 tools/benchmarks/peers/zero3_record.py --metrics m.jsonl --label zero3-pinned \
        --model qwen2.5-1.5b --rc 0 --json-out peers.jsonl
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def read_steps(path):
    steps = []
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                try:
                    steps.append(json.loads(line))
                except ValueError:  # a blank line, or the last one cut short by a crash
                    pass
    return steps


def last_line(path):
    """The last non-empty line of zero3's output (its error), or None."""
    if not path or not os.path.isfile(path):
        return None
    with open(path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[-1][:500] if lines else None


def record(steps, a):
    rec = {"peer": "zero3", "label": a.label, "model": a.model, "mbs": a.mbs, "seq": a.seq,
           "warmup": a.warmup, "steps": len(steps),
           "variant": a.variant, "rc": a.rc, "wall_s": a.wall_s}
    if a.rc in (124, 137):
        rec["status"] = "timeout"
    elif a.rc != 0:
        rec["status"] = "error"
    else:
        rec["status"] = "ok" if steps else "error"
    if rec["status"] != "ok" or not steps:
        rec["error"] = last_line(a.log) or f"no steps in {a.metrics}"
    if not steps:
        return rec
    times = pc.StepTimes()
    for s in steps:
        times.add(s["fwd_ms"] / 1e3, s["bwd_ms"] / 1e3, s["step_ms"] / 1e3, s.get("loss"))
    rec.update(times.summary(a.warmup, steps[-1]["tokens"]))
    # zero3's own step total (the slowest rank's) beside the sum of the phases
    first = a.warmup if len(steps) > a.warmup else 0
    rec["zero3_total_ms"] = pc.upper_median([s["total_ms"] for s in steps[first:]])
    rec["peak_gpu_alloc_gib"] = round(max(s.get("device_peak_bytes") or 0 for s in steps) / 2**30, 2)
    rec["pinned_host_gib"] = round((steps[-1].get("pinned_host_bytes") or 0) / 2**30, 2)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", required=True, help="the run's --metrics file")
    ap.add_argument("--label", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mbs", type=int, default=4, help="the run's micro-batch, for the record")
    ap.add_argument("--seq", type=int, default=2048, help="the run's sequence length, for the record")
    ap.add_argument("--variant", default="", help="the run's extra zero3 flags, for the record")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rc", type=int, default=0, help="zero3's exit status")
    ap.add_argument("--log", default=None, help="zero3's output; its last line is the error of a failed run")
    ap.add_argument("--wall-s", type=float, default=None)
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    pc.emit(record(read_steps(a.metrics), a), a.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
