// Copyright 2026 The zero3 Authors.
//
// The NVMe swapper (swap_file.h) against the drive behind a directory: the
// rate of writing, reading, and the optimizer's pattern (reading piece k + 1
// while writing piece k - 1 back, in pieces of PIECE_MIB (64 MiB by
// default), two buffers each way; then again with the host busy 20 ms a
// piece, as with its AdamW, which the transfers should hide), with the
// swapper's block size and queue depth. Compare with the drive's own rate
// at the same block size and queue depth, e.g.
//
//   fio --name=w --filename=DIR/fio.tmp --size=4G --bs=1M --iodepth=8 \
//       --ioengine=io_uring --direct=1 --rw=write (then --rw=read)
//
// (tools/benchmarks/swap_vs_fio.sh runs both).
//
//   bazel run -c opt //core/runtime:swap_benchmark -- \
//       DIR [GIB] [BLOCK] [DEPTH] [PIECE_MIB]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/swap_file.h"

namespace {

using zero3::runtime::SwapFile;
using zero3::runtime::SwapOptions;

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

struct Free {
  void operator()(char* p) const { std::free(p); }
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "swap_benchmark: %s\n",
               std::string(s.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: swap_benchmark DIR [GIB=4] [BLOCK=1048576] "
                 "[DEPTH=8] [PIECE_MIB=64]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const double gib = argc > 2 ? std::atof(argv[2]) : 4;
  SwapOptions options;
  if (argc > 3) options.block_size = std::atoll(argv[3]);
  if (argc > 4) options.queue_depth = std::atoi(argv[4]);
  const int64_t piece_bytes =
      (argc > 5 ? std::max<int64_t>(1, std::atoll(argv[5])) : 64) << 20;
  const int64_t pieces =
      std::max<int64_t>(4, static_cast<int64_t>(gib * (1 << 30)) / piece_bytes);
  const int64_t bytes = pieces * piece_bytes;
  auto file =
      SwapFile::Create(dir, "zero3_swap_benchmark.swap", bytes, options);
  if (!file.ok()) return Fail(file.status());
  SwapFile& f = **file;
  std::vector<std::unique_ptr<char[], Free>> buffers;
  for (int i = 0; i < 4; ++i) {
    buffers.emplace_back(static_cast<char*>(
        std::aligned_alloc(SwapFile::kAlignment, piece_bytes)));
    std::memset(buffers.back().get(), i + 1, piece_bytes);
  }
  std::printf(
      "%s: %.1f GiB in %lld pieces of %lld MiB, block %lld, depth %d, "
      "%s, %s\n",
      f.path().c_str(), bytes / double(1 << 30), static_cast<long long>(pieces),
      static_cast<long long>(piece_bytes >> 20),
      static_cast<long long>(options.block_size), options.queue_depth,
      f.direct() ? "O_DIRECT" : "buffered",
      f.uring() ? "io_uring" : "synchronous");
  // Sequential writes, then reads, two transfers in flight.
  for (const bool write : {true, false}) {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t last = 0;
    for (int64_t k = 0; k < pieces; ++k) {
      char* b = buffers[k % 2].get();
      auto t = write ? f.Write(k * piece_bytes, b, piece_bytes)
                     : f.Read(k * piece_bytes, b, piece_bytes);
      if (!t.ok()) return Fail(t.status());
      if (last != 0) {
        if (absl::Status s = f.Wait(last); !s.ok()) return Fail(s);
      }
      last = *t;
    }
    if (absl::Status s = f.WaitAll(); !s.ok()) return Fail(s);
    std::printf("%-28s %7.2f GB/s\n", write ? "write" : "read",
                bytes / Seconds(t0) / 1e9);
  }
  // The optimizer's pattern: piece k + 1 read while piece k - 1 is written,
  // the host copying piece k meanwhile; then with the host also busy for
  // `busy_ms` a piece (its AdamW), which the transfers should hide.
  for (const int busy_ms : {0, 20}) {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t read_next = 0, write_last = 0;
    auto first = f.Read(0, buffers[0].get(), piece_bytes);
    if (!first.ok()) return Fail(first.status());
    read_next = *first;
    for (int64_t k = 0; k < pieces; ++k) {
      if (absl::Status s = f.Wait(read_next); !s.ok()) return Fail(s);
      if (k + 1 < pieces) {
        auto r = f.Read((k + 1) * piece_bytes, buffers[(k + 1) % 2].get(),
                        piece_bytes);
        if (!r.ok()) return Fail(r.status());
        read_next = *r;
      }
      if (write_last != 0) {
        if (absl::Status s = f.Wait(write_last); !s.ok()) return Fail(s);
      }
      const auto busy =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_ms);
      std::memcpy(buffers[2 + k % 2].get(), buffers[k % 2].get(), piece_bytes);
      while (std::chrono::steady_clock::now() < busy) {
      }
      auto w = f.Write(k * piece_bytes, buffers[2 + k % 2].get(), piece_bytes);
      if (!w.ok()) return Fail(w.status());
      write_last = *w;
    }
    if (absl::Status s = f.WaitAll(); !s.ok()) return Fail(s);
    std::printf(
        "%-28s %7.2f GB/s (read + write)\n",
        busy_ms == 0 ? "read k+1 / write k-1" : "  host busy 20 ms a piece",
        2 * bytes / Seconds(t0) / 1e9);
  }
  return 0;
}
