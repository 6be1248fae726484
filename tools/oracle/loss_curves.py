"""Prints two trainers' losses step by step and writes them as JSON: the
report tools/oracle/compare_training.py and compare_finetune.py share."""

import json
import os


def report(ours, theirs, args, label, versions):
    """Prints each step's losses and their relative difference, then the
    largest; writes args.work/compare.json. Returns the process's exit
    status: 0 when every one of args.steps steps is within args.tolerance."""
    worst = 0.0
    print(f"{'step':>4} {'zero3':>10} {'pytorch':>10} {'relative':>9}")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        d = abs(a - b) / abs(b)
        worst = max(worst, d)
        print(f"{i + 1:>4} {a:>10.6f} {b:>10.6f} {d:>9.2e}")
    print(f"{label}largest relative difference {worst:.2e} "
          f"(tolerance {args.tolerance:g})")
    with open(os.path.join(args.work, "compare.json"), "w") as f:
        json.dump({"zero3": ours, "pytorch": theirs, "args": vars(args),
                   **versions}, f, indent=1)
    return 0 if worst <= args.tolerance and len(ours) == args.steps else 1
