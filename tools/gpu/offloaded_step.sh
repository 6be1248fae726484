#!/usr/bin/env bash
# zero3.offloaded_step on one GPU (docs/whatif.md, "Where the offloaded AdamW
# runs"): --check-reference with the AdamW on the device (at the step's end
# and speculative) and split, then Qwen2.5-1.5B, 4 x 2048, bf16, the exact
# speculative step, with the AdamW on the host, on the device and split
# ("auto"), with all the host's cores and with 4 of them (taskset, a GPU's
# share of an 8-GPU node). Prints each check's line and each run's summary,
# bound and auto's choice; logs under OUT.
#
#   tools/gpu/offloaded_step.sh ZERO3 [OUT]
#
# ZERO3 is a zero3 binary built with -c opt on a machine with the CUDA
# toolkit. Needs one GPU with 40 GB and about 6 minutes.
set -u
Z=${1:?usage: offloaded_step.sh ZERO3 [OUT]}
OUT=${2:-/tmp/zero3_offloaded_step}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
grep -m1 'model name' /proc/cpuinfo; nproc
T=(train --backend cuda --steps 4 --check-reference --model tiny)
chk() {  # NAME ARGS...
  local name=$1; shift
  timeout 120 "$Z" "${T[@]}" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(grep -E '^check against' "$OUT/$name.log" | cut -c1-160)"
}
chk device --set zero3.offloaded_step=device \
  --set zero_optimization.sub_group_size=5000
chk device_speculative --set zero3.offloaded_step=device \
  --set zero_optimization.sub_group_size=5000 --set gradient_clipping=0 \
  --set zero_optimization.offload_optimizer.super_offload=true \
  --set zero_optimization.reduce_bucket_size=3000
chk auto_bf16 --set bf16.enabled=true --set zero3.offloaded_step=auto
M=(train --backend cuda --model qwen2.5-1.5b --ranks 1 --seq 2048
   --data synthetic --steps 8 --set bf16.enabled=true
   --set train_micro_batch_size_per_gpu=4 --set gradient_clipping=0
   --set zero_optimization.offload_optimizer.super_offload=true
   --set zero3.host_step_overlap=forward
   --set zero_optimization.reduce_bucket_size=5e7)
run() {  # NAME [taskset ...] -- placement
  local name=$1 placement=$2; shift 2
  timeout 150 "$@" "$Z" "${M[@]}" --set zero3.offloaded_step="$placement" \
    > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(grep -E '^summary' "$OUT/$name.log")"
  grep -E '^offloaded step|^bound' "$OUT/$name.log" | cut -c1-220
}
for p in host device auto; do run "all_$p" "$p"; done
for p in host device auto; do run "cores4_$p" "$p" taskset -c 0-3; done
