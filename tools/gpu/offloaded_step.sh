#!/usr/bin/env bash
# zero3.offloaded_step and the exact step's bound on one GPU (docs/whatif.md,
# "When the host's AdamW runs", "Where the offloaded AdamW runs"):
# --check-reference with the AdamW on the device (fp32 and bf16 states, at
# the step's end and speculative), then Qwen2.5-1.5B, 4 x 2048, bf16, the
# exact speculative step: no offload; fp32 states on the host at reduce and
# prefetch buckets of 1e7 (the simulator's 1.08 x bound); fp32 auto with 2
# and 16 device slots (zero3.offloaded_step_buffers); bf16 states on the
# host and auto (buckets 5e7 / 2e7); then the host, device and auto
# placements on 4 cores (taskset, a GPU's share of an 8-GPU node). Prints
# each check's line and each run's summary, bound and auto's choice; logs
# under OUT.
#
#   tools/gpu/offloaded_step.sh ZERO3 [OUT]
#
# ZERO3 is a zero3 binary built with -c opt on a machine with the CUDA
# toolkit. Needs one GPU with 40 GB and about 7 minutes.
set -u
Z=${1:?usage: offloaded_step.sh ZERO3 [OUT]}
OUT=${2:-/tmp/zero3_offloaded_step}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
grep -m1 'model name' /proc/cpuinfo; nproc
T=(train --backend cuda --steps 4 --check-reference --model tiny)
B16=(--set bf16.enabled=true --set bf16.bf16_master_weights_and_grads=true
     --set bf16.bf16_optimizer_states=true)
chk() {  # NAME ARGS...
  local name=$1; shift
  timeout 120 "$Z" "${T[@]}" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(grep -E '^check' "$OUT/$name.log" | tail -1 | cut -c1-160)"
}
chk device --set zero3.offloaded_step=device \
  --set zero_optimization.sub_group_size=5000
chk device_speculative --set zero3.offloaded_step=device \
  --set zero_optimization.sub_group_size=5000 --set gradient_clipping=0 \
  --set zero_optimization.offload_optimizer.super_offload=true \
  --set zero_optimization.reduce_bucket_size=3000
chk bf16_device "${B16[@]}" --set zero3.offloaded_step=device \
  --set zero_optimization.sub_group_size=5000
chk bf16_device_speculative "${B16[@]}" --set zero3.offloaded_step=device \
  --set gradient_clipping=0 --set zero_optimization.reduce_bucket_size=3000 \
  --set zero_optimization.offload_optimizer.super_offload=true
M=(train --backend cuda --model qwen2.5-1.5b --ranks 1 --seq 2048
   --data synthetic --steps 8 --set bf16.enabled=true
   --set train_micro_batch_size_per_gpu=4 --set gradient_clipping=0)
EX=(--set zero_optimization.offload_optimizer.super_offload=true
    --set zero3.host_step_overlap=forward)
run() {  # NAME [taskset ...] -- ARGS: the run's extra arguments
  local name=$1; shift
  local pre=()
  while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift
  timeout 150 "${pre[@]}" "$Z" "${M[@]}" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(grep -E '^summary' "$OUT/$name.log")"
  grep -E '^offloaded step|^bound' "$OUT/$name.log" | cut -c1-220
}
run no_offload -- --set zero_optimization.offload_optimizer.device=none
run fp32_host_1e7 -- "${EX[@]}" --set zero_optimization.reduce_bucket_size=1e7 \
  --set zero_optimization.stage3_prefetch_bucket_size=1e7
for slots in 2 16; do  # zero3.offloaded_step_buffers: 2 was the fixed count
  run "fp32_auto_slots$slots" -- "${EX[@]}" \
    --set zero_optimization.reduce_bucket_size=5e7 \
    --set zero_optimization.stage3_prefetch_bucket_size=2e7 \
    --set zero3.offloaded_step=auto --set zero3.offloaded_step_buffers="$slots"
done
for p in host auto; do
  run "bf16_$p" -- "${EX[@]}" "${B16[@]}" \
    --set zero_optimization.reduce_bucket_size=5e7 \
    --set zero_optimization.stage3_prefetch_bucket_size=2e7 \
    --set zero3.offloaded_step="$p"
done
for p in host device auto; do
  run "cores4_$p" taskset -c 0-3 -- "${EX[@]}" \
    --set zero_optimization.reduce_bucket_size=5e7 \
    --set zero_optimization.stage3_prefetch_bucket_size=2e7 \
    --set zero3.offloaded_step="$p"
done
