// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_list.h"

#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(CpuListTest, RangesAndSingles) {
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(CpuListText({5}), "5");
  EXPECT_EQ(CpuListText({}), "");
}

TEST(CpuListTest, ThisProcessMayRunSomewhereInOrder) {
  const std::vector<int> cpus = AffinityCpus();
  ASSERT_FALSE(cpus.empty());
  for (size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
}

}  // namespace
}  // namespace zero3
