// Copyright 2026 The zero3 Authors.

#include "core/util/median.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(UpperMedianTest, OddAndEvenCounts) {
  EXPECT_EQ(UpperMedian({3, 1, 2}), 2);
  EXPECT_EQ(UpperMedian({4, 1, 3, 2}), 3);  // the upper middle value
  EXPECT_EQ(UpperMedian({7}), 7);
}

}  // namespace
}  // namespace zero3
