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

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace zero3 {

// Runs body(begin, end) over [0, n) on up to `threads` threads (the caller's
// included), giving each at least `min_per_thread` elements.
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
  const int64_t per = ((n + t - 1) / t + align - 1) / align * align;
  std::vector<std::thread> workers;
  for (int i = 1; i < t; ++i) {
    const int64_t begin = i * per;
    const int64_t end = std::min(n, begin + per);
    if (begin >= end) break;
    workers.emplace_back([&body, begin, end] { body(begin, end); });
  }
  body(int64_t{0}, std::min(n, per));
  for (std::thread& w : workers) w.join();
}

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_PARALLEL_FOR_H_
