// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/op_profile.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::HasSubstr;

TEST(OpProfileTest, NumbersBecomeHashes) {
  EXPECT_EQ(OpKey("layer 3 attention bwd"), "layer # attention bwd");
  EXPECT_EQ(OpKey("reduce-scatter bucket 12"), "reduce-scatter bucket #");
  EXPECT_EQ(OpKey("q_proj"), "q_proj");
}

TEST(OpProfileTest, GroupsPerStreamAndStepLargestFirst) {
  const std::vector<runtime::OpTiming> ops = {
      {"compute", "layer 0 attention fwd", 0, 2000000},
      {"compute", "layer 1 attention fwd", 2000000, 4000000},
      {"reduce", "reduce-scatter bucket 0", 0, 1000000},
      {"compute", "layer 0 attention fwd", 10000000, 12000000},
      {"compute", "layer 1 attention fwd", 12000000, 14000000},
      {"compute", "norm fwd", 4000000, 4500000},
  };
  const std::vector<OpGroup> groups = GroupOps(ops, 2);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].key, "layer # attention fwd");
  EXPECT_DOUBLE_EQ(groups[0].count, 2);
  EXPECT_DOUBLE_EQ(groups[0].ms, 4);
  EXPECT_EQ(groups[1].stream, "reduce");
  EXPECT_DOUBLE_EQ(groups[1].ms, 0.5);
  EXPECT_DOUBLE_EQ(groups[2].ms, 0.25);
}

TEST(OpProfileTest, ComparisonShowsTheErrorAndTheRest) {
  const std::vector<OpGroup> measured = {{"compute", "a", 1, 4.0},
                                         {"compute", "b", 1, 2.0},
                                         {"compute", "c", 1, 1.0}};
  const std::vector<OpGroup> predicted = {{"compute", "a", 1, 3.0},
                                          {"compute", "c", 1, 0.5}};
  const std::string table = FormatOpComparison(measured, predicted, 2);
  EXPECT_THAT(table, HasSubstr("-25.0%"));             // a
  EXPECT_THAT(table, HasSubstr("(everything else)"));  // c
  EXPECT_THAT(table, HasSubstr("1.000       0.500"));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
