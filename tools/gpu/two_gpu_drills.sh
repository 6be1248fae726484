#!/usr/bin/env bash
# The first checks of zero3 on two GPUs of one node, each printing PASS or
# FAIL with its log under OUT (docs/gpu.md, "Two GPUs: the first run"):
#   1. --check-reference at 2 ranks (ZeRO-3 sharding across real GPUs
#      against the unsharded reference on the simulator);
#   2. NCCL's memory against the preflight (the warm-up counted);
#   3. kill -9 of rank 1 mid-run under a launcher that does not stop the
#      others (two processes started by hand): rank 0 must exit on its own,
#      through the peer links, within seconds;
#   4. SIGTERM of rank 1 only: both ranks stop after the same step;
#   5. a save at 2 ranks resumed at 1 and at 2 (bit-exact where the rank
#      count is unchanged), and a 1-rank save resumed at 2;
#   6. the launch under torchrun, where torchrun is installed.
#
#   tools/gpu/two_gpu_drills.sh ZERO3 [OUT]
#
# ZERO3 is a zero3 binary built with -c opt on a machine with the CUDA
# toolkit. Needs two GPUs and about 5 minutes.
set -u
Z=${1:?usage: two_gpu_drills.sh ZERO3 [OUT]}
OUT=${2:-/tmp/zero3_two_gpus}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
MODEL=(--model qwen2.5-0.5b --seq 512 --set train_micro_batch_size_per_gpu=2)
pass=0; fail=0
result() {  # NAME OK
  if [ "$2" = 0 ]; then echo "PASS $1"; pass=$((pass + 1));
  else echo "FAIL $1 (see $OUT)"; fail=$((fail + 1)); fi
}

# 1. Sharding across two GPUs against the reference.
# (The reference runs on the CPU: a small model.)
"$Z" launch --nproc-per-node 2 -- train --backend cuda --model tiny \
  --seq 128 --steps 4 --check-reference > "$OUT/check_reference.log" 2>&1
result "check-reference at 2 ranks" $?

# 2. The estimate against the measured peaks (NCCL's buffers included).
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 3 > "$OUT/memory.log" 2>&1
ok=$?; grep -q "memory against the estimate" "$OUT/memory.log" || ok=1
result "memory against the preflight" $ok

# 3. A rank killed with no launcher to stop the others: rank 0 exits by
# itself (peer links), status 3, within 30 s of the kill.
port=$((29500 + RANDOM % 1000))
common=(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 LOCAL_WORLD_SIZE=2)
env "${common[@]}" RANK=0 LOCAL_RANK=0 "$Z" train --backend cuda \
  "${MODEL[@]}" --steps 200 > "$OUT/kill_rank0.log" 2>&1 &
r0=$!
env "${common[@]}" RANK=1 LOCAL_RANK=1 "$Z" train --backend cuda \
  "${MODEL[@]}" --steps 200 > "$OUT/kill_rank1.log" 2>&1 &
r1=$!
for _ in $(seq 120); do grep -q "^step 3/" "$OUT/kill_rank0.log" && break; sleep 1; done
kill -9 $r1
killed=$SECONDS
ok=1
for _ in $(seq 30); do
  if ! kill -0 $r0 2> /dev/null; then wait $r0; [ $? = 3 ] && ok=0; break; fi
  sleep 1
done
kill -9 $r0 2> /dev/null
grep -q "process ended without finishing" "$OUT/kill_rank0.log" || ok=1
echo "rank 0 exited $((SECONDS - killed)) s after the kill" >> "$OUT/kill_rank0.log"
result "kill -9 of rank 1 ends rank 0 (peer links)" $ok

# 4. SIGTERM to rank 1 only: both stop after the same step, status 143.
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 200 > "$OUT/sigterm.log" 2>&1 &
launcher=$!
for _ in $(seq 120); do grep -q "step 3/" "$OUT/sigterm.log" && break; sleep 1; done
pkill -TERM -f -n "zero3 train --backend cuda" # the newest: one rank only
wait $launcher; status=$?
ok=1; [ $status = 143 ] && ok=0
result "SIGTERM of one rank stops both" $ok

# 5. Resume and reshard on GPUs.
rm -rf "$OUT/ckpt2" "$OUT/ckpt1"
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 6 --metrics "$OUT/straight.jsonl" > "$OUT/straight.log" 2>&1
a=$?
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 3 --save "$OUT/ckpt2" --save-interval 3 > "$OUT/save2.log" 2>&1
b=$?
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 6 --resume "$OUT/ckpt2" --metrics "$OUT/resumed.jsonl" \
  > "$OUT/resume2.log" 2>&1
c=$?
ok=1
if [ $a = 0 ] && [ $b = 0 ] && [ $c = 0 ]; then
  python3 - "$OUT/straight.jsonl" "$OUT/resumed.jsonl" <<'PY' && ok=0
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if "loss" in r}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = [s for s in b if s > 3]
sys.exit(0 if steps and all(a[s] == b[s] for s in steps) else 1)
PY
fi
result "resume at 2 ranks, bit-exact" $ok
"$Z" train --backend cuda "${MODEL[@]}" --steps 6 --resume "$OUT/ckpt2" \
  > "$OUT/reshard_2to1.log" 2>&1
result "resume 2 -> 1 rank" $?
"$Z" train --backend cuda "${MODEL[@]}" --steps 3 --save "$OUT/ckpt1" \
  --save-interval 3 > "$OUT/save1.log" 2>&1 &&
"$Z" launch --nproc-per-node 2 -- train --backend cuda "${MODEL[@]}" \
  --steps 6 --resume "$OUT/ckpt1" > "$OUT/reshard_1to2.log" 2>&1
result "resume 1 -> 2 ranks" $?

# 6. torchrun as the launcher (its store holds MASTER_PORT).
if command -v torchrun > /dev/null; then
  torchrun --standalone --nproc_per_node 2 "$Z" train --backend cuda \
    "${MODEL[@]}" --steps 3 > "$OUT/torchrun.log" 2>&1
  result "torchrun launch" $?
fi

echo "$pass passed, $fail failed; logs in $OUT"
[ $fail = 0 ]
