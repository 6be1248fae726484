#!/usr/bin/env bash
# Runs zero3 and its peers (PyTorch FSDP2, DeepSpeed ZeRO-3 at two commits)
# back to back on one GPU and writes one table. From the repository root on
# the GPU machine:
#
#   bash tools/benchmarks/peers/run_all.sh [--models 1.5b,3b] [--only V,...] [--skip V,...]
#        [--mbs N] [--seq N] [--budget SECONDS] [--checkpointing none|hf|ds]
#        [--clip X] [--zero3 FILE] [--peer-dir DIR] [--nvme-dir DIR] [--list]
#
# --models: 0.5b, 1.5b, 3b, 7b (Qwen2.5), qwen3-4b, llama-3.2-3b.
# Needs: a zero3 binary (--zero3 FILE, plain or .xz, which is unpacked to
# /tmp; default ./zero3, else bazel-bin/tools/zero3), and in --peer-dir (default
# .peer): whl/*.whl (Python packages DeepSpeed needs that the machine lacks),
# whl_opt/*.whl (installed only where the machine's own are missing or too
# old), ds_pr8207.tar.xz and ds_head.tar.xz (export_deepspeed.sh); for the
# NVMe variants, libaio/root (Debian's libaio1 and libaio-dev unpacked with
# dpkg -x) where the machine has no libaio for DeepSpeed's async_io op.
# --nvme-dir (default /tmp/peers_nvme) is where the NVMe variants put their
# swap files; it is emptied after each run.
# Writes into $OUT (default /tmp/peers_out): peers.jsonl (one JSON line per
# run, failures too), table.md, machine.json, run.log, logs.tgz (each run's
# full output and zero3's metrics files).
#
# --clip sets gradient_clipping for zero3 and DeepSpeed (default 1.0; 0 turns
# it off, which lets the speculative host steps commit on random weights);
# the FSDP2 script does not clip.
# Every run has a timeout; a run starts only if the budget (default 540 s for
# the whole script) still holds its minimum, so the script ends in time and
# the most important runs come first. --list prints the variants.
set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/peers_out}
MODELS=1.5b
ONLY=""
SKIP=""
BUDGET=540
CKPT=none
PEER_DIR=.peer
NVME_DIR=/tmp/peers_nvme
ZERO3=""
MBS=${MBS:-4}
SEQ=${SEQ:-2048}
ZERO3_STEPS=${ZERO3_STEPS:-8}
CLIP=1.0
PEER_STEPS=${PEER_STEPS:-6}
WARMUP=2

# name | kind | in the default set | extra arguments
VARIANTS='
zero3-pinned|zero3|1|
zero3-nooffload|zero3|1|--set zero_optimization.offload_optimizer.device=none
zero3-ratio0.5|zero3|1|--set zero_optimization.offload_optimizer.ratio=0.5
zero3-ratioauto|zero3|1|--set zero_optimization.offload_optimizer.ratio=auto
zero3-speculative-forward|zero3|0|--set zero_optimization.offload_optimizer.super_offload=true --set zero3.host_step_overlap=forward --set zero_optimization.reduce_bucket_size=5e7
zero3-delayed|zero3|0|--set zero3.host_step_overlap=delayed
zero3-bf16states|zero3|0|--set bf16.bf16_master_weights_and_grads=true --set bf16.bf16_optimizer_states=true --set zero_optimization.offload_optimizer.super_offload=true --set zero3.host_step_overlap=forward --set zero_optimization.reduce_bucket_size=5e7
zero3-bf16states-auto|zero3|0|--set bf16.bf16_master_weights_and_grads=true --set bf16.bf16_optimizer_states=true --set zero_optimization.offload_optimizer.super_offload=true --set zero3.host_step_overlap=forward --set zero_optimization.reduce_bucket_size=5e7 --set zero_optimization.stage3_prefetch_bucket_size=2e7 --set zero3.offloaded_step=auto
fsdp2-fused|fsdp2|1|--offload 1 --pin 1 --adamw fused
ds-pr8207|ds|1|--tree ds_pr8207 --pin true
ds-head|ds|1|--tree ds_head --pin true
ds-head-ratio0.5|ds|1|--tree ds_head --pin true --offload-extra {"ratio":0.5}
fsdp2-default|fsdp2|1|--offload 1 --pin 1 --adamw default
ds-head-superoffload|ds|1|--tree ds_head --pin true --offload-extra {"super_offload":true}
ds-head-bf16states|ds|0|--tree ds_head --pin true --bf16-extra {"bf16_master_weights_and_grads":true,"bf16_optimizer_states":true}
zero3-superoffload|zero3|0|--set zero_optimization.offload_optimizer.super_offload=true
zero3-offloaded-step-auto|zero3|0|--set zero3.offloaded_step=auto --set zero_optimization.offload_optimizer.super_offload=true --set zero3.host_step_overlap=forward --set zero_optimization.reduce_bucket_size=5e7
zero3-offloaded-step-device|zero3|0|--set zero3.offloaded_step=device --set zero_optimization.offload_optimizer.super_offload=true --set zero_optimization.reduce_bucket_size=5e7
fsdp2-nooffload|fsdp2|1|--offload 0 --adamw fused
zero3-pageable|zero3|0|--set zero_optimization.offload_optimizer.pin_memory=false --set zero3.grad_offload=blocking
zero3-nvme|zero3|0|--set zero_optimization.offload_optimizer.device=nvme --set zero_optimization.offload_optimizer.nvme_path=@NVME@
ds-head-nvme|ds|0|--tree ds_head --pin true --offload-extra {"device":"nvme","nvme_path":"@NVME@","buffer_count":4} --aio {"block_size":1048576,"queue_depth":8,"intra_op_parallelism":1,"single_submit":false,"overlap_events":true}
'

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
list_variants() {
  echo "variant (run in this order; * = in the default set): extra arguments"
  echo "$VARIANTS" | while IFS='|' read -r name kind dflt args; do
    [ -n "$name" ] && printf '  %s%-22s %-6s %s\n' "$([ "$dflt" = 1 ] && echo '*' || echo ' ')" "$name" "$kind" "$args"
  done
}

while [ $# -gt 0 ]; do
  case $1 in
    --models) MODELS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --skip) SKIP=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --checkpointing) CKPT=$2; shift 2 ;;
    --mbs) MBS=$2; shift 2 ;;
    --clip) CLIP=$2; shift 2 ;;
    --seq) SEQ=$2; shift 2 ;;
    --zero3) ZERO3=$2; shift 2 ;;
    --peer-dir) PEER_DIR=$2; shift 2 ;;
    --nvme-dir) NVME_DIR=$2; shift 2 ;;
    --list) list_variants; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
case $CKPT in none|hf|ds) ;; *) echo "run_all.sh: --checkpointing takes none, hf or ds, not '$CKPT'" >&2; exit 2 ;; esac
in_list() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }
for v in ${ONLY//,/ } ${SKIP//,/ }; do
  echo "$VARIANTS" | grep -q "^$v|" || { echo "run_all.sh: no variant '$v' (--list lists them)" >&2; exit 2; }
done
for m in ${MODELS//,/ }; do
  case $m in 0.5b|1.5b|3b|7b|qwen3-4b|llama-3.2-3b) ;; *) echo "run_all.sh: --models takes 0.5b, 1.5b, 3b, 7b (Qwen2.5), qwen3-4b, llama-3.2-3b, not '$m'" >&2; exit 2 ;; esac
done
for n in "$MBS" "$SEQ"; do
  case $n in ''|*[!0-9]*|0) echo "run_all.sh: --mbs and --seq take positive integers, not '$n'" >&2; exit 2 ;; esac
done
case $CLIP in ''|*[!0-9.]*|*.*.*) echo "run_all.sh: --clip takes a number >= 0, not '$CLIP'" >&2; exit 2 ;; esac
CLIP_NOTE=""
[ "$CLIP" != 1.0 ] && [ "$CLIP" != 1 ] && CLIP_NOTE=" --set gradient_clipping=$CLIP"
ZERO3_CKPT=()
[ "$CKPT" != none ] && ZERO3_CKPT=(--gradient-checkpointing)

T0=$SECONDS
mkdir -p "$OUT"
JL=$OUT/peers.jsonl
LOG=$OUT/run.log
WORK=/tmp/peers_work
rm -rf "$WORK"
mkdir -p "$WORK/logs" "$WORK/metrics"
: > "$JL"
: > "$LOG"
left() { echo $((BUDGET - (SECONDS - T0))); }
note() { echo "[run_all +$((SECONDS - T0))s] $*" | tee -a "$LOG"; }
fail_line() {  # label model peer status [rc]
  printf '{"label": "%s", "model": "%s", "peer": "%s", "status": "%s", "rc": %s}\n' \
    "$1" "$2" "$3" "$4" "${5:-null}" >> "$JL"
}

export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export DS_BUILD_OPS=0 TORCH_CUDA_ARCH_LIST=9.0

# ---- the variants to run, in order
RUNS=()
while IFS='|' read -r name kind dflt args; do
  [ -z "$name" ] && continue
  if [ -n "$ONLY" ]; then in_list "$name" "$ONLY" || continue
  else [ "$dflt" = 1 ] || continue; fi
  [ -n "$SKIP" ] && in_list "$name" "$SKIP" && continue
  RUNS+=("$name")
done <<< "$VARIANTS"
variant_field() { echo "$VARIANTS" | grep "^$1|" | cut -d'|' -f"$2"; }
NEED_TREES=""
for v in "${RUNS[@]}"; do
  if [ "$(variant_field "$v" 2)" = ds ]; then
    t=$(variant_field "$v" 4 | sed -E 's/.*--tree ([^ ]+).*/\1/')
    in_list "$t" "$NEED_TREES" || NEED_TREES="${NEED_TREES:+$NEED_TREES,}$t"
  fi
done
note "models: $MODELS; variants: ${RUNS[*]}; budget ${BUDGET}s; checkpointing $CKPT; gradient clipping $CLIP; OUT=$OUT"

# ---- Python packages DeepSpeed needs that the machine lacks
if [ -n "$NEED_TREES" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/peer_site \
    "$PEER_DIR"/whl/*.whl >> "$LOG" 2>&1 || note "installing $PEER_DIR/whl failed: DeepSpeed will not import"
  export PYTHONPATH=/tmp/peer_site${PYTHONPATH:+:$PYTHONPATH}
  opt=()
  python3 -c "import setuptools, distutils.ccompiler" > /dev/null 2>&1 || opt+=("$PEER_DIR"/whl_opt/setuptools-*.whl)
  python3 -c "import importlib.metadata as m, sys; from packaging.version import Version as V
sys.exit(V(m.version('typing_extensions')) < V('4.14.1'))" > /dev/null 2>&1 || opt+=("$PEER_DIR"/whl_opt/typing_extensions-*.whl)
  if [ ${#opt[@]} -gt 0 ]; then
    note "installing ${opt[*]} (the machine's own is missing or too old)"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/peer_site \
      "${opt[@]}" >> "$LOG" 2>&1 || note "installing ${opt[*]} failed"
  fi
fi

# ---- libaio for DeepSpeed's async_io op (NVMe), where the machine lacks it
if [ -d "$PEER_DIR/libaio/root/usr/include" ]; then
  aio=$(cd "$PEER_DIR/libaio/root/usr" && pwd)
  export CPATH=$aio/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=$aio/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$aio/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# ---- DeepSpeed trees, unpacked to /tmp, and their CPUAdam built (in parallel) before anything is timed
declare -A BUILT=()
build_pids=()
build_trees=()
for t in ${NEED_TREES//,/ }; do
  mkdir -p /tmp/peer_ds
  if ! tar -xJf "$PEER_DIR/$t.tar.xz" -C /tmp/peer_ds 2>> "$LOG"; then
    note "cannot unpack $PEER_DIR/$t.tar.xz: its runs are skipped"
    continue
  fi
  note "building CPUAdam for $t ($(head -1 "/tmp/peer_ds/$t/DS_COMMIT"))"
  timeout -k 10 180 python3 "$HERE/deepspeed_zero3.py" --src "/tmp/peer_ds/$t" --build-only --json-out "$JL" \
    > "$WORK/logs/build-$t.log" 2>&1 &
  build_pids+=($!)
  build_trees+=("$t")
done

# ---- zero3 binary
if [ -z "$ZERO3" ]; then
  for c in ./zero3 bazel-bin/tools/zero3; do [ -f "$c" ] && { ZERO3=$c; break; }; done
fi
Z=""
if [ -n "$ZERO3" ] && [ -f "$ZERO3" ]; then
  mkdir -p /tmp/peer_zero3
  case $ZERO3 in
    *.xz) xz -dc "$ZERO3" > /tmp/peer_zero3/zero3 && chmod +x /tmp/peer_zero3/zero3 && Z=/tmp/peer_zero3/zero3 ;;
    *) Z=$(cd "$(dirname "$ZERO3")" && pwd)/$(basename "$ZERO3") ;;
  esac
fi
[ -n "$Z" ] || note "no zero3 binary (looked for ${ZERO3:-./zero3, bazel-bin/tools/zero3}; give --zero3 FILE): zero3 runs are skipped"

# ---- the machine
python3 - "$OUT/machine.json" "${Z:-}" <<'PY' >> "$LOG" 2>&1
import json, os, subprocess, sys, datetime
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"? ({e})"
m = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
m["gpu"], _, m["driver"] = sh("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1").partition(", ")
m["cpus"] = os.cpu_count()
m["mem_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
m["nvcc"] = sh("nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2")
m["memlock"] = sh("ulimit -l")
for mod in ("torch", "transformers", "pydantic"):
    m[mod] = sh(f"python3 -c 'import {mod}; print({mod}.__version__)'")
if sys.argv[2]:
    m["zero3_sha256"] = sh(f"sha256sum {sys.argv[2]} | cut -c1-16")
json.dump(m, open(sys.argv[1], "w"))
print("machine:", json.dumps(m))
PY

for i in "${!build_pids[@]}"; do
  wait "${build_pids[$i]}"
  rc=$?
  t=${build_trees[$i]}
  if [ $rc -eq 0 ]; then
    BUILT[$t]=1
    note "CPUAdam for $t ready"
  else
    note "CPUAdam build for $t failed (rc $rc): its runs are skipped; the end of its log:"
    tail -25 "$WORK/logs/build-$t.log" | tee -a "$LOG"
  fi
done

# ---- one run: its own session, so that whatever it leaves running goes with it
RUN_RC=0
run_one() {  # label timeout command...
  local label=$1 to=$2
  shift 2
  local pf=$WORK/logs/$label.pgid
  # shellcheck disable=SC2016  # $$, $0 and $@ are the inner shell's
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pf" timeout -k 10 "$to" "$@" > "$WORK/logs/$label.log" 2>&1 &
  wait $!
  RUN_RC=$?
  [ -s "$pf" ] && kill -KILL -- "-$(cat "$pf")" 2> /dev/null
  return 0
}

# seconds: the minimum left to start a run, and its timeout (1.5B at 4 x 2048
# tokens; 3B takes 1.6x, 7B 4x, 0.5B 0.6x; the timeout also grows by half the
# factor by which a micro-batch holds more tokens)
min_s() { case $1 in zero3) echo 30 ;; fsdp2) echo 45 ;; *) echo 75 ;; esac; }
max_s() { case $1 in zero3) echo 120 ;; fsdp2) echo 150 ;; *) echo 200 ;; esac; }
TOKENS_X10=$((MBS * SEQ * 10 / 8192))
[ "$TOKENS_X10" -lt 10 ] && TOKENS_X10=10
scale() { case $2 in 3b|llama-3.2-3b) echo $(($1 * 16 / 10)) ;; qwen3-4b) echo $(($1 * 2)) ;; 7b) echo $(($1 * 4)) ;; 0.5b) echo $(($1 * 6 / 10)) ;; *) echo "$1" ;; esac; }
# A --models entry's preset name: 1.5b is qwen2.5-1.5b.
preset() { case $1 in qwen*|llama*) echo "$1" ;; *) echo "qwen2.5-$1" ;; esac; }
longer() { echo $(($1 * (10 + (TOKENS_X10 - 10) / 2) / 10)); }

port=29600
for m in ${MODELS//,/ }; do
  for v in "${RUNS[@]}"; do
    kind=$(variant_field "$v" 2)
    args=$(variant_field "$v" 4)
    nvme=0
    case $args in *@NVME@*) nvme=1; mkdir -p "$NVME_DIR/$v"; args=${args//@NVME@/$NVME_DIR/$v} ;; esac
    label=$v-$m
    peer=$kind
    [ "$kind" = ds ] && peer=deepspeed-zero3
    need=$(scale "$(min_s "$kind")" "$m")
    # NVMe runs move the optimizer state through the drive every step
    [ "$nvme" = 1 ] && need=$((need * 2))
    l=$(left)
    if [ "$l" -lt "$need" ]; then
      note "skip $label: ${l}s of the budget left, it needs ${need}s"
      fail_line "$label" "$(preset "$m")" "$peer" skipped_budget
      continue
    fi
    to=$(longer "$(scale "$(max_s "$kind")" "$m")")
    [ "$nvme" = 1 ] && to=$((to * 3))
    [ "$to" -gt $((l - 5)) ] && to=$((l - 5))
    before=$(wc -l < "$JL")
    port=$((port + 1))
    t0=$SECONDS
    case $kind in
      zero3)
        if [ -z "$Z" ]; then
          note "skip $label: no zero3 binary"
          fail_line "$label" "$(preset "$m")" zero3 skipped_no_binary
          continue
        fi
        metrics=$WORK/metrics/$label.jsonl
        # shellcheck disable=SC2086
        run_one "$label" "$to" "$Z" train --backend cuda --model "$(preset "$m")" --ranks 1 --seq "$SEQ" \
          --data synthetic --steps "$ZERO3_STEPS" --set bf16.enabled=true \
          --set train_micro_batch_size_per_gpu="$MBS" --set gradient_clipping="$CLIP" --metrics "$metrics" \
          "${ZERO3_CKPT[@]}" $args
        python3 "$HERE/zero3_record.py" --metrics "$metrics" --label "$label" --model "$(preset "$m")" \
          --mbs "$MBS" --seq "$SEQ" --variant "$args${ZERO3_CKPT[*]:+ ${ZERO3_CKPT[*]}}$CLIP_NOTE" --log "$WORK/logs/$label.log" --warmup "$WARMUP" --rc "$RUN_RC" --wall-s $((SECONDS - t0)) --json-out "$JL" > /dev/null
        ;;
      fsdp2)
        ck=none
        [ "$CKPT" != none ] && ck=hf
        # shellcheck disable=SC2086
        run_one "$label" "$to" python3 "$HERE/fsdp2_offload.py" --model "$m" --mbs "$MBS" --seq "$SEQ" \
          --steps "$PEER_STEPS" --warmup "$WARMUP" --checkpointing "$ck" --label "$label" --port "$port" \
          --json-out "$JL" $args
        ;;
      ds)
        tree=$(echo "$args" | sed -E 's/.*--tree ([^ ]+).*/\1/')
        if [ -z "${BUILT[$tree]:-}" ]; then
          note "skip $label: no CPUAdam for $tree"
          fail_line "$label" "$(preset "$m")" "$peer" skipped_build_failed
          continue
        fi
        pin=$(echo "$args" | sed -E 's/.*--pin ([^ ]+).*/\1/')
        extra='{}'
        case $args in *--offload-extra*) extra=$(echo "$args" | sed -E 's/.*--offload-extra ([^ ]+).*/\1/') ;; esac
        bf16='{}'
        case $args in *--bf16-extra*) bf16=$(echo "$args" | sed -E 's/.*--bf16-extra ([^ ]+).*/\1/') ;; esac
        aio='{}'
        case $args in *--aio*) aio=$(echo "$args" | sed -E 's/.*--aio ([^ ]+).*/\1/') ;; esac
        run_one "$label" "$to" python3 "$HERE/deepspeed_zero3.py" --src "/tmp/peer_ds/$tree" --model "$m" \
          --mbs "$MBS" --seq "$SEQ" --steps "$PEER_STEPS" --warmup "$WARMUP" --pin "$pin" \
          --offload-extra "$extra" --bf16-extra "$bf16" --aio "$aio" --checkpointing "$CKPT" --gradient-clipping "$CLIP" --label "$label" \
          --port "$port" --json-out "$JL"
        ;;
    esac
    [ "$nvme" = 1 ] && rm -rf "${NVME_DIR:?}/$v"
    if [ "$(wc -l < "$JL")" -eq "$before" ]; then
      st="exit"
      [ "$RUN_RC" -eq 124 ] && st=timeout
      # SIGKILL before the timeout (plus its 10 s grace) came from elsewhere:
      # on Linux most often the kernel's OOM killer (dmesg says)
      if [ "$RUN_RC" -eq 137 ]; then
        st=timeout
        [ $((SECONDS - t0)) -lt "$to" ] && st=killed
      fi
      fail_line "$label" "$(preset "$m")" "$peer" "$st" "$RUN_RC"
    fi
    summary=$(tail -1 "$JL" | python3 -c "import json, sys; r = json.loads(sys.stdin.read())
print(r.get('status'), *(f'{k} {r.get(k)}' for k in ('fwd_ms', 'bwd_ms', 'step_ms', 'tokens_per_s') if r.get(k) is not None))")
    note "$label (timeout ${to}s) rc $RUN_RC in $((SECONDS - t0))s: $summary"
    if [ "$RUN_RC" -ne 0 ]; then tail -20 "$WORK/logs/$label.log" | tee -a "$LOG"; fi
  done
done

# ---- the table
python3 "$HERE/make_table.py" "$JL" --machine "$OUT/machine.json" > "$OUT/table.md" 2>> "$LOG"
tar -czf "$OUT/logs.tgz" -C "$WORK" logs metrics 2>> "$LOG"
note "done; $(left)s of the budget left"
cat "$OUT/table.md"
