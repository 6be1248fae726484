// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/cpu_binding.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Two sockets of 4 cores with hyperthreads numbered as Linux does on most
// servers: CPU i and i + 8 are siblings.
std::vector<Cpu> TwoSocketsWithSiblings() {
  std::vector<Cpu> cpus;
  for (int id = 0; id < 16; ++id) {
    const int physical = id % 8;
    cpus.push_back({id, physical / 4, physical % 4});
  }
  return cpus;
}

TEST(CpuBindingTest, SiblingsStayTogetherAndRanksGetOneSocketEach) {
  const auto slices = CpuSlices(TwoSocketsWithSiblings(), 2);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1, 2, 3, 8, 9, 10, 11));
  EXPECT_THAT(slices[1], ElementsAre(4, 5, 6, 7, 12, 13, 14, 15));
}

TEST(CpuBindingTest, UnevenSplitsDifferByOneCore) {
  const auto slices = CpuSlices(TwoSocketsWithSiblings(), 3);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1, 2, 8, 9, 10));
  EXPECT_THAT(slices[1], ElementsAre(3, 4, 5, 11, 12, 13));
  EXPECT_THAT(slices[2], ElementsAre(6, 7, 14, 15));
}

TEST(CpuBindingTest, FewerCoresThanRanksLeavesThemUnbound) {
  EXPECT_THAT(CpuSlices(TwoSocketsWithSiblings(), 9), IsEmpty());
  EXPECT_THAT(CpuSlices({}, 1), IsEmpty());
}

TEST(CpuBindingTest, UnknownTopologyCountsEachCpuAsACore) {
  std::vector<Cpu> cpus;
  for (int id = 0; id < 4; ++id) cpus.push_back({id, 0, -1 - id});
  const auto slices = CpuSlices(cpus, 2);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1));
  EXPECT_THAT(slices[1], ElementsAre(2, 3));
}

TEST(CpuBindingTest, ThisProcessMayRunSomewhere) {
  EXPECT_FALSE(AllowedCpus().empty());
}

TEST(CpuBindingTest, ListText) {
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(CpuListText({}), "");
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
