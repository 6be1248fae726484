// Copyright 2026 The zero3 Authors.

#include "core/util/suggest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(EditDistanceTest, CountsEdits) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("abc", ""), 3);
  EXPECT_EQ(EditDistance("stage", "stage"), 0);
  EXPECT_EQ(EditDistance("stgae", "stage"), 1);  // transposition
  EXPECT_EQ(EditDistance("stge", "stage"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

struct NearestCase {
  const char* name;
  const char* expected;
};

TEST(NearestNameTest, SuggestsPlausibleMisspellings) {
  const std::vector<std::string> keys = {
      "stage",
      "offload_optimizer",
      "offload_param",
      "stage3_prefetch_bucket_size",
      "stage3_param_persistence_threshold",
      "reduce_bucket_size",
      "sub_group_size",
  };
  const NearestCase cases[] = {
      {"stgae", "stage"},
      {"Stage", "stage"},
      {"offload-optimizer", "offload_optimizer"},
      {"offload_optimiser", "offload_optimizer"},
      {"ofload_param", "offload_param"},
      {"stage3_prefetch_bucket_sise", "stage3_prefetch_bucket_size"},
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size"},
      {"reduce_bucket", "reduce_bucket_size"},
      {"subgroup_size", "sub_group_size"},
      {"zzz", ""},
      {"learning_rate", ""},
      {"", ""},
  };
  for (const NearestCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(NearestName(c.name, keys), c.expected);
  }
}

TEST(NearestNameTest, PrefersTheCloserAndThenTheEarlier) {
  EXPECT_EQ(NearestName("ab", {"ax", "ab"}), "ab");
  EXPECT_EQ(NearestName("ab", {"ax", "ay"}), "ax");
}

}  // namespace
}  // namespace zero3
