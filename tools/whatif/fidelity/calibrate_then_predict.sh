#!/usr/bin/env bash
# Calibrates a one-GPU machine, then measures and predicts the nine
# configurations of h200_1x_calibrated.textproto there (docs/fidelity.md).
#
#   calibrate_then_predict.sh ZERO3 OUTDIR [STEPS] [BUDGET_S]
#
# ZERO3 is a `-c opt` build of //tools:zero3 with the CUDA backend. OUTDIR
# receives the profile (cal.textproto), calibrate's log and one file per
# configuration with train's --predict report (median of steps 2..STEPS,
# default 6). A configuration is not started once BUDGET_S seconds (default
# 540) have passed since the start; the order puts the device-bound cases
# first. An existing OUTDIR/cal.textproto is used instead of calibrating.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 ZERO3 OUTDIR [STEPS] [BUDGET_S]" >&2
  exit 2
fi
zero3=$1 out=$2 steps=${3:-6} budget=${4:-540}
if ! [[ "$steps" =~ ^[0-9]+$ ]] || [ "$steps" -lt 2 ]; then
  echo "$0: STEPS takes an integer >= 2 (step 1 is not measured), not '$steps'" >&2
  exit 2
fi
if ! [[ "$budget" =~ ^[0-9]+$ ]]; then
  echo "$0: BUDGET_S takes a number of seconds, not '$budget'" >&2
  exit 2
fi
if [ ! -x "$zero3" ]; then
  echo "$0: $zero3 is not an executable zero3 build" >&2
  exit 2
fi
mkdir -p "$out"
start=$(date +%s)

if [ ! -s "$out/cal.textproto" ]; then
  if ! "$zero3" calibrate --fit-pageable --fit-model qwen2.5-1.5b,qwen2.5-0.5b \
    --out "$out/cal.textproto.tmp" 2> "$out/calibrate.log"; then
    echo "$0: calibrate failed; see $out/calibrate.log" >&2
    exit 1
  fi
  mv "$out/cal.textproto.tmp" "$out/cal.textproto"
  echo "calibrated in $(( $(date +%s) - start )) s" >&2
fi

# name | model | micro-batch | further --set values
cases=(
  "qwen1.5b_mb4_none_1gpu|qwen2.5-1.5b|4|zero_optimization.offload_optimizer.device=none"
  "qwen0.5b_mb8_pinned_1gpu|qwen2.5-0.5b|8|"
  "qwen3b_mb4_none_1gpu|qwen2.5-3b|4|zero_optimization.offload_optimizer.device=none"
  "qwen1.5b_mb4_pinned_1gpu|qwen2.5-1.5b|4|"
  "qwen1.5b_mb2_acc4_pinned_1gpu|qwen2.5-1.5b|2|gradient_accumulation_steps=4"
  "qwen1.5b_mb4_ratio0.5_1gpu|qwen2.5-1.5b|4|zero_optimization.offload_optimizer.ratio=0.5"
  "qwen1.5b_mb4_ppfp32_1gpu|qwen2.5-1.5b|4|zero3.grad_offload_copy=per_param_fp32"
  "qwen3b_mb2_pinned_1gpu|qwen2.5-3b|2|"
  "qwen1.5b_mb2_pageable_1gpu|qwen2.5-1.5b|2|zero_optimization.offload_optimizer.pin_memory=false,zero3.grad_offload=blocking"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name model mb extra <<< "$c"
  if [ $(( $(date +%s) - start )) -ge "$budget" ]; then
    echo "$name: not run (budget of $budget s spent)" >&2
    continue
  fi
  sets=(--set bf16.enabled=true --set "train_micro_batch_size_per_gpu=$mb")
  IFS=',' read -r -a more <<< "$extra"
  for s in "${more[@]}"; do sets+=(--set "$s"); done
  "$zero3" train --backend cuda --ranks 1 --model "$model" --seq 2048 \
    --data synthetic --steps "$steps" "${sets[@]}" --predict \
    --hardware "$out/cal.textproto" > "$out/$name.txt" 2>&1 &&
    echo "$name: done at $(( $(date +%s) - start )) s" >&2 ||
    echo "$name: failed (see $out/$name.txt)" >&2
done
