#!/usr/bin/env bash
# The NVMe swapper (core/runtime/swap_file.h) against fio on the same directory,
# block size and queue depth: fio's sequential write and read (io_uring,
# O_DIRECT), then core/runtime:swap_benchmark's write, read and the optimizer's
# read-one-write-one pattern.
#
#   tools/benchmarks/swap_vs_fio.sh DIR [GIB=4] [BLOCK=1048576] [DEPTH=8]
set -euo pipefail
DIR=${1:?usage: swap_vs_fio.sh DIR [GIB] [BLOCK] [DEPTH]}
GIB=${2:-4}; BLOCK=${3:-1048576}; DEPTH=${4:-8}
cd "$(dirname "$0")/../.."
if command -v fio >/dev/null; then
  for rw in write read; do
    fio --name="$rw" --filename="$DIR/zero3_fio.tmp" --size="${GIB}G" \
      --bs="$BLOCK" --iodepth="$DEPTH" --ioengine=io_uring --direct=1 \
      --rw="$rw" --output-format=terse --terse-version=3 |
      awk -F';' -v rw="$rw" '{ kb = (rw == "read") ? $7 : $48;
        printf "fio %-24s %7.2f GB/s\n", rw, kb * 1024 / 1e9 }'
  done
  rm -f "$DIR/zero3_fio.tmp"
else
  echo "fio not installed (apt-get install fio): the swapper's figures only"
fi
bazel run -c opt //core/runtime:swap_benchmark -- "$DIR" "$GIB" "$BLOCK" "$DEPTH"
