#!/usr/bin/env bash
# `zero3 launch` as a user runs it: the real binary starting copies of
# itself, exit codes, output prefixes, a failing rank, a forwarded signal.
set -uo pipefail

source tools/cli_test_lib.sh
CONFIGS=testing/testdata/configs

expect 0 --help
grep -q "launch" "$TMP/out" || fail "--help does not list launch"

expect 2 launch
grep -q "give the zero3 command after --" "$TMP/err" || fail "no usage message"

# Two ranks validating a configuration: both print it, prefixed.
expect 0 launch --nproc-per-node 2 -- config "$CONFIGS/zero3_offload.json"
grep -q '^\[rank 0\] {' "$TMP/out" || fail "rank 0's output is not prefixed"
grep -q '^\[rank 1\] {' "$TMP/out" || fail "rank 1's output is not prefixed"
grep -q "MASTER_PORT=" "$TMP/err" || fail "the start line does not name the port"

expect 0 launch --no-prefix --nproc-per-node 2 -- config --help
[ "$(grep -c '^Usage: zero3 config' "$TMP/out")" -eq 2 ] ||
  fail "--no-prefix: expected two unprefixed usage lines"

# torchrun's spellings.
expect 0 launch --nproc_per_node=2 --master_port 0 --standalone -- config --help
[ "$(grep -c 'Usage: zero3 config' "$TMP/out")" -eq 2 ] ||
  fail "--nproc_per_node: expected two ranks"
expect 2 launch --nproc-per-node two -- config --help
grep -q "must be between 1 and 1024, or gpu, got 'two'" "$TMP/err" ||
  fail "a bad --nproc-per-node is not named"
if ! command -v nvidia-smi >/dev/null; then
  expect 2 launch --nproc-per-node gpu -- config --help
  grep -q "nproc-per-node gpu: no GPU is visible" "$TMP/err" ||
    fail "--nproc-per-node gpu without GPUs"
fi
# Several nodes: each node's launcher needs node 0's address and port.
expect 2 launch --nnodes 2 --node_rank 1 -- config --help
grep -q "needs --master-addr" "$TMP/err" || fail "--nnodes without address"
expect 2 launch --nnodes 2 --node-rank 2 --master_addr h --master-port 1 -- config --help
grep -q "node-rank must be in \[0, 1\]" "$TMP/err" || fail "bad --node-rank"
expect 2 launch --nnodes 2 --standalone -- config --help
grep -q "standalone is one node" "$TMP/err" || fail "--standalone with nodes"
expect 0 launch --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 \
  --master-port 29999 --nproc-per-node 2 -- config --help
grep -q '^\[rank 3\] Usage' "$TMP/out" || fail "node 1 does not run rank 3"
grep -q "(ranks 2-3 of 4, node 1 of 2)" "$TMP/err" || fail "no node line"

# A failing rank: the launcher exits with its code and quotes its stderr.
expect 2 launch --nproc-per-node 3 -- config /nonexistent/config.json
grep -q "zero3 launch: rank [0-2] (pid [0-9]*) exited with code 2" "$TMP/err" ||
  fail "the failing rank is not named"
grep -q "^  error: cannot read configuration file" "$TMP/err" ||
  fail "the failing rank's stderr is not quoted"

# SIGTERM to the launcher reaches the ranks (long simulated runs) and the
# launcher exits 128 + 15.
"$ZERO3" launch --nproc-per-node 2 -- train --ranks 1 --steps 200000 \
  >"$TMP/out" 2>"$TMP/err" &
launcher=$!
for _ in $(seq 1 200); do
  if grep -q '^\[rank 0\] step' "$TMP/out" && grep -q '^\[rank 1\] step' "$TMP/out"; then
    break
  fi
  sleep 0.05
done
kill -TERM "$launcher"
wait "$launcher"
code=$?
[ "$code" -eq 143 ] || fail "SIGTERM: launcher exited $code, want 143"
grep -q "got SIGTERM, forwarding it to every rank" "$TMP/err" ||
  fail "SIGTERM: no forwarding notice"
grep -q "rank 0: stopped (SIGTERM)" "$TMP/err" || fail "SIGTERM: rank 0 not stopped"
grep -q "rank 1: stopped (SIGTERM)" "$TMP/err" || fail "SIGTERM: rank 1 not stopped"

finish
