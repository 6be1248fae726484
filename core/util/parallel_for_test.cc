// Copyright 2026 The zero3 Authors.

#include "core/util/parallel_for.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace {

// Every element is visited exactly once, in ranges that start at multiples
// of `align`, whatever the split.
TEST(ParallelForTest, CoversEveryElementOnceInAlignedRanges) {
  for (int64_t n : {0, 1, 31, 1000, 100003}) {
    for (int threads : {1, 2, 3, 8}) {
      std::vector<std::atomic<int>> seen(n);
      std::mutex mu;
      std::vector<int64_t> starts;
      ParallelFor(
          n, threads,
          [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) seen[i]++;
            std::lock_guard<std::mutex> lock(mu);
            starts.push_back(begin);
          },
          /*min_per_thread=*/1000, /*align=*/32);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(seen[i].load(), 1) << "n " << n << " threads " << threads;
      }
      for (int64_t s : starts) EXPECT_EQ(s % 32, 0) << s;
    }
  }
}

}  // namespace
}  // namespace zero3
