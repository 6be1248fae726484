// Copyright 2026 The zero3 Authors.

#include "core/util/parallel_for.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

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

// ProcessCores follows the affinity mask, not the machine's CPU count.
TEST(ParallelForTest, ProcessCoresFollowsTheAffinityMask) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(ProcessCores(), CPU_COUNT(&all));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(ProcessCores(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

// ParallelZero clears every byte, including a tail shorter than a piece.
TEST(ParallelForTest, ParallelZeroClearsEveryByte) {
  const int64_t bytes = (int64_t{3} << 24) + 12345;
  std::vector<unsigned char> data(bytes, 0xAB);
  ParallelZero(data.data(), bytes, 4);
  for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(data[i], 0) << i;
}

// On a fresh anonymous mapping, every page is resident afterwards: the
// first-touch faults happened here.
TEST(ParallelForTest, ParallelZeroFaultsInAFreshMapping) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t bytes = int64_t{48} << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::vector<unsigned char> resident(bytes / page);
  ASSERT_EQ(mincore(p, bytes, resident.data()), 0);
  int64_t before = 0;
  for (unsigned char r : resident) before += r & 1;
  EXPECT_LT(before, static_cast<int64_t>(resident.size()));
  ParallelZero(p, bytes, 4);
  ASSERT_EQ(mincore(p, bytes, resident.data()), 0);
  for (size_t i = 0; i < resident.size(); ++i) {
    ASSERT_EQ(resident[i] & 1, 1) << "page " << i;
  }
  munmap(p, bytes);
}

}  // namespace
}  // namespace zero3
