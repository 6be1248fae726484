// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_list.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(CpuListTest, RangesAndSingles) {
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(CpuListText({5}), "5");
  EXPECT_EQ(CpuListText({}), "");
}

}  // namespace
}  // namespace zero3
