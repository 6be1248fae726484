// Copyright 2026 The zero3 Authors.
//
// parallel_for.h: split [0, n) into contiguous chunks over threads.
//
// For host work over large flat arrays (the optimizer step, parameter
// initialization). Chunk starts are multiples of `align` elements, so
// threads writing 4-byte elements never share a cache line when align is 16.
// Blocks until every chunk is done; `body` must be safe to call
// concurrently on disjoint ranges.

#ifndef ZERO3_CORE_UTIL_PARALLEL_FOR_H_
#define ZERO3_CORE_UTIL_PARALLEL_FOR_H_

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace zero3 {

// The CPUs this process may run on (its affinity mask, which `zero3 launch`
// narrows to the rank's share of the node), not every CPU of the machine;
// at least 1.
inline int ProcessCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs body(begin, end) over [0, n) on up to `threads` threads (the caller's
// included), giving each at least `min_per_thread` elements. The range is
// handed out in chunks of about min_per_thread / 4 elements, each thread
// taking the next when done with its last, so a thread slowed by other work
// on its core delays the whole by one chunk, not by its whole share.
template <typename Body>
void ParallelFor(int64_t n, int threads, const Body& body,
                 int64_t min_per_thread = int64_t{1} << 18,
                 int64_t align = 32) {
  const int t = static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>(threads, n / std::max<int64_t>(1, min_per_thread))));
  if (t == 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  const int64_t chunk =
      (std::max<int64_t>(1, min_per_thread / 4) + align - 1) / align * align;
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) return;
      body(begin, std::min(n, begin + chunk));
    }
  };
  std::vector<std::thread> workers;
  for (int i = 1; i < t; ++i) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
}

// memcpy of `bytes` from src to dst on up to `threads` threads, in pieces
// of at least 16 MiB.
inline void ParallelCopy(void* dst, const void* src, int64_t bytes,
                         int threads) {
  ParallelFor(
      bytes, threads,
      [&](int64_t begin, int64_t end) {
        std::memcpy(static_cast<char*>(dst) + begin,
                    static_cast<const char*>(src) + begin, end - begin);
      },
      int64_t{1} << 24, 64);
}

// memset(dst, 0, bytes) on up to `threads` threads, in pieces of at least
// 16 MiB. On a fresh anonymous mapping this also faults every page in, so
// the cost of first touch is paid here, spread over the threads (and their
// NUMA nodes), not by the first code that writes the memory.
inline void ParallelZero(void* dst, int64_t bytes, int threads) {
  ParallelFor(
      bytes, threads,
      [&](int64_t begin, int64_t end) {
        std::memset(static_cast<char*>(dst) + begin, 0, end - begin);
      },
      int64_t{1} << 24, 64);
}

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_PARALLEL_FOR_H_
