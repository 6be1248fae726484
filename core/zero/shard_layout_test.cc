// Copyright 2026 The zero3 Authors.

#include "core/zero/shard_layout.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

TEST(ShardLayoutTest, PadsAndPartitionsLikeDeepSpeed) {
  // 15 elements over 2 ranks: P = 8, rank 1 owns 7 real elements and one pad;
  // 3 elements over 4 ranks: rank 3 owns nothing real.
  ShardLayout layout({15, 3, 8}, 4, 3);
  EXPECT_EQ(layout.param(0).padded, 16);
  EXPECT_EQ(layout.param(0).partition, 4);
  EXPECT_EQ(layout.ValidElements(0, 3), 3);
  EXPECT_EQ(layout.param(1).partition, 1);
  EXPECT_EQ(layout.ValidElements(1, 2), 1);
  EXPECT_EQ(layout.ValidElements(1, 3), 0);  // padding only
  EXPECT_EQ(layout.param(2).offset, 5);
  EXPECT_EQ(layout.total(), 7);
  ShardLayout two({15}, 2, 1);
  EXPECT_EQ(two.param(0).partition, 8);
  EXPECT_EQ(two.ValidElements(0), 7);
}

TEST(ShardLayoutTest, SubGroupsCloseAtTheParameterThatReachesTheSize) {
  ShardLayout layout({10, 10, 10, 30, 5}, 1, 0);
  const std::vector<ParamRange> groups = layout.SubGroups(15);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].first, 0);
  EXPECT_EQ(groups[0].last, 1);  // 20 >= 15: overshoots by one parameter
  EXPECT_EQ(groups[1].first, 2);
  EXPECT_EQ(groups[1].last, 3);
  EXPECT_EQ(groups[2].first, 4);
  EXPECT_EQ(groups[2].offset, 60);
  EXPECT_EQ(groups[2].elements, 5);
}

TEST(ShardLayoutTest, BucketsFollowReadinessOrderAndStayContiguous) {
  // Ready in descending order: 4, 3, 2, 1, 0. Bucket size 25 (padded, W=2).
  ShardLayout layout({10, 10, 10, 30, 5}, 2, 0);
  const std::vector<ParamRange> buckets = layout.Buckets(25);
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].first, 4);  // 6 (5 padded), then 30 does not fit
  EXPECT_EQ(buckets[0].last, 4);
  EXPECT_EQ(buckets[1].first, 3);  // larger than the bucket: on its own
  EXPECT_EQ(buckets[1].last, 3);
  EXPECT_EQ(buckets[2].first, 1);  // 10 + 10 = 20, the third would be 30
  EXPECT_EQ(buckets[2].last, 2);
  EXPECT_EQ(buckets[2].elements, 10);  // two partitions of 5
  EXPECT_EQ(buckets[3].first, 0);
  EXPECT_EQ(buckets[3].offset, 0);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
