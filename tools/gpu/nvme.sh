#!/usr/bin/env bash
# The optimizer state on NVMe on one GPU machine (docs/config.md, "The
# optimizer state on NVMe"): the swapper against fio on the drive behind
# DIR, zero3 calibrate --nvme-path (the drive's rates for the profile),
# --check-reference with the state on NVMe, then Qwen2.5-1.5B and -3B with
# the state in host memory and on NVMe. Prints each run's summary and
# bound; logs under OUT.
#
#   tools/gpu/nvme.sh ZERO3 SWAP_BENCHMARK DIR [OUT]
#
# ZERO3 and SWAP_BENCHMARK are -c opt binaries (//tools:zero3,
# //core/runtime:swap_benchmark). DIR is a directory on the drive to test
# (its file system should have O_DIRECT). About 10 minutes.
set -u
Z=${1:?usage: nvme.sh ZERO3 SWAP_BENCHMARK DIR [OUT]}
B=${2:?usage: nvme.sh ZERO3 SWAP_BENCHMARK DIR [OUT]}
DIR=${3:?usage: nvme.sh ZERO3 SWAP_BENCHMARK DIR [OUT]}
OUT=${4:-/tmp/zero3_nvme}
mkdir -p "$OUT" "$DIR"
export NCCL_NVLS_ENABLE=0
df -hT "$DIR" | tail -1
if command -v fio >/dev/null; then
  for rw in write read; do
    fio --name="$rw" --filename="$DIR/zero3_fio.tmp" --size=8G --bs=1M \
      --iodepth=8 --ioengine=io_uring --direct=1 --rw="$rw" \
      --output-format=terse --terse-version=3 |
      awk -F';' -v rw="$rw" '{ kb = (rw == "read") ? $7 : $48;
        printf "fio %-24s %7.2f GB/s\n", rw, kb * 1024 / 1e9 }'
  done
  rm -f "$DIR/zero3_fio.tmp"
fi
"$B" "$DIR" 8 1048576 8
timeout 300 "$Z" calibrate --backend cuda --no-fit --nvme-path "$DIR" \
  --out "$OUT/calibrated.textproto" > "$OUT/calibrate.log" 2>&1
echo "calibrate rc=$? $(grep -E 'NVMe under' "$OUT/calibrate.log")"
NV=(--set zero_optimization.offload_optimizer.device=nvme
    --set zero_optimization.offload_optimizer.nvme_path="$DIR")
timeout 120 "$Z" train --backend cuda --steps 4 --check-reference \
  --model tiny "${NV[@]}" > "$OUT/check.log" 2>&1
echo "check rc=$? $(grep -E '^check against' "$OUT/check.log" | cut -c1-160)"
for m in qwen2.5-1.5b qwen2.5-3b; do
  for where in cpu nvme; do
    args=(train --backend cuda --model "$m" --ranks 1 --seq 2048
          --data synthetic --steps 5 --set bf16.enabled=true
          --set train_micro_batch_size_per_gpu=4 --set gradient_clipping=0)
    [ "$where" = nvme ] && args+=("${NV[@]}")
    timeout 300 "$Z" "${args[@]}" > "$OUT/${m}_$where.log" 2>&1
    echo "$m $where rc=$? $(grep -E '^summary' "$OUT/${m}_$where.log")"
    grep -E '^bound' "$OUT/${m}_$where.log" | cut -c1-200
  done
done
